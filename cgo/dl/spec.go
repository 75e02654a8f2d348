package dl

// Spec names a library and the places Find looks for it.
type Spec struct {
	// Name is the library as people call it ("NCCL"), for messages.
	Name string
	// Sonames are the file names to try, preferred first ("libnccl.so.2").
	Sonames []string
	// EnvVar, when set to a file (or a folder holding one of Sonames), is
	// the only place searched.
	EnvVar string
	// WheelDirs are folders below a Python site-packages folder where
	// pip wheels keep the library ("nvidia/nccl/lib").
	WheelDirs []string
	// CacheDirs are folders below partbench's cache (CacheRoot) where
	// scripts/install-test-deps.sh keeps a library it fetched ("nvrtc/lib").
	CacheDirs []string
}

// NCCL is libnccl.so.2, also shipped by the nvidia-nccl-cu* wheels.
func NCCL() Spec {
	return Spec{
		Name:      "NCCL",
		Sonames:   []string{"libnccl.so.2"},
		EnvVar:    "PARTBENCH_NCCL_LIB",
		WheelDirs: []string{"nvidia/nccl/lib"},
	}
}

// CUDA is the CUDA driver library, installed with the GPU driver (never
// in a wheel; the toolkit's lib64/stubs/libcuda.so is a link-time stub and
// is not searched).
func CUDA() Spec {
	return Spec{
		Name:    "CUDA driver",
		Sonames: []string{"libcuda.so.1"},
		EnvVar:  "PARTBENCH_CUDA_LIB",
	}
}

// CUBLAS is cuBLAS, newest major version first. CUDA 13 wheels keep every
// library in nvidia/cu13/lib.
func CUBLAS() Spec {
	return Spec{
		Name:      "cuBLAS",
		Sonames:   []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
		EnvVar:    "PARTBENCH_CUBLAS_LIB",
		WheelDirs: []string{"nvidia/cublas/lib", "nvidia/cu13/lib"},
	}
}

// NVRTC is the CUDA runtime compiler, newest major version first: CUDA
// 13, 12, and 11.2–11.8 (which all keep the soname libnvrtc.so.11.2).
// scripts/install-test-deps.sh unpacks Debian's libnvrtc12 (or
// libnvrtc11.2) into the cache folder nvrtc/lib.
func NVRTC() Spec {
	return Spec{
		Name:      "NVRTC",
		Sonames:   []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"},
		EnvVar:    "PARTBENCH_NVRTC_LIB",
		WheelDirs: []string{"nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib"},
		CacheDirs: []string{"nvrtc/lib"},
	}
}
