package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestKernelNamesAndSignatures(t *testing.T) {
	if len(kernelNames) != len(kernelSigs) {
		t.Errorf("%d kernels, %d signatures", len(kernelNames), len(kernelSigs))
	}
	for _, name := range kernelNames {
		if _, ok := kernelSigs[name]; !ok {
			t.Errorf("%s has no signature", name)
		}
		if !strings.Contains(kernelSource(), name+"(") && !strings.HasPrefix(name, "pb_attention_v") {
			t.Errorf("%s is not in kernelSource", name)
		}
	}
}

// clangPrelude declares what NVRTC provides without headers (the builtin
// variables, math functions and intrinsics kernelSource uses), so clang
// can stand in for NVRTC here.
const clangPrelude = `
#include <__clang_cuda_builtin_vars.h>
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
typedef unsigned long size_t;
struct uint4 { unsigned int x, y, z, w; } __attribute__((aligned(16)));
struct float4 { float x, y, z, w; } __attribute__((aligned(16)));
__device__ float expf(float); __device__ float tanhf(float); __device__ float sqrtf(float); __device__ float fmaxf(float, float);
__device__ double pow(double, double); __device__ void sincos(double, double*, double*);
__device__ unsigned int __float_as_uint(float); __device__ float __uint_as_float(unsigned int);
__device__ int __float_as_int(float); __device__ float __int_as_float(int);
__device__ float __shfl_xor_sync(unsigned int, float, int);
__device__ int atomicCAS(int*, int, int);
__device__ void __syncthreads();
`

// Without NVRTC on this machine, clang (where installed) compiles
// kernelSource for each element type to PTX, with warnings as errors, and
// every entry point's parameters must have the sizes and kinds of
// kernelSigs: the launches pack their arguments from those lists.
func TestKernelSourceCompilesWithClang(t *testing.T) {
	clang := ""
	for _, name := range []string{"clang++", "clang++-19", "clang++-18", "clang++-17", "clang++-16", "clang++-15", "clang++-14"} {
		if p, err := exec.LookPath(name); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("no clang++ to compile the CUDA kernels with (NVRTC compiles them on a GPU machine)")
	}
	dir := t.TempDir()
	src, prelude := filepath.Join(dir, "kernels.cu"), filepath.Join(dir, "prelude.h")
	if err := os.WriteFile(src, []byte(kernelSource()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prelude, []byte(clangPrelude), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`(?s)\.visible \.entry (\w+)\((.*?)\)`)
	param := regexp.MustCompile(`\.param \.(\w+) `)
	kind := map[string]string{"u64": "pu", "u32": "i", "f32": "f"}
	for _, dt := range dtypes {
		out := filepath.Join(dir, dt.name+".ptx")
		args := []string{"-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib",
			"-O2", "-Wall", "-Werror", "-include", prelude, dt.define, "-S", "-o", out, src}
		if b, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: clang %v: %v\n%s", dt.name, args, err, b)
		}
		ptx, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range entry.FindAllStringSubmatch(string(ptx), -1) {
			name, params := m[1], param.FindAllStringSubmatch(m[2], -1)
			sig, ok := kernelSigs[name]
			if !ok {
				t.Errorf("%s: entry point %s has no signature in kernelSigs", dt.name, name)
				continue
			}
			seen[name] = true
			if len(params) != len(sig) {
				t.Errorf("%s: %s takes %d parameters, kernelSigs says %q", dt.name, name, len(params), sig)
				continue
			}
			for i, p := range params {
				if !strings.ContainsRune(kind[p[1]], rune(sig[i])) {
					t.Errorf("%s: %s parameter %d is .%s, kernelSigs says %q", dt.name, name, i, p[1], sig[i])
				}
			}
		}
		for _, name := range kernelNames {
			if !seen[name] {
				t.Errorf("%s: no entry point %s in the PTX", dt.name, name)
			}
		}
		// The 16-bit types convert with cvt (fp16) or bit arithmetic (bf16).
		if dt.name == "fp16" && !strings.Contains(string(ptx), "cvt.rn.f16.f32") {
			t.Errorf("fp16 PTX has no cvt.rn.f16.f32")
		}
	}
}

// Every kernel has a launch bound, the bound is the block the launches use
// (ops.go's constants), and a launch beyond it is refused with both sizes.
func TestLaunchBounds(t *testing.T) {
	for _, name := range kernelNames {
		b, ok := kernelLaunch[name]
		if !ok {
			t.Errorf("%s has no launch bound", name)
			continue
		}
		if b.threads <= 0 || b.threads > 1024 || b.dynSmem < 0 {
			t.Errorf("%s: bound %+v outside 1..1024 threads", name, b)
		}
	}
	if len(kernelLaunch) != len(kernelNames) {
		t.Errorf("%d launch bounds for %d kernels", len(kernelLaunch), len(kernelNames))
	}
	if err := checkLaunchBound("pb_argmax", argmaxThreads, 0); err != nil {
		t.Errorf("pb_argmax at its own block: %v", err)
	}
	err := checkLaunchBound("pb_add", 2*flatThreads, 0)
	if err == nil || !strings.Contains(err.Error(), "launch of pb_add with 512 threads and 0 bytes of dynamic shared memory, beyond its bound of 256 threads and 0 bytes") {
		t.Errorf("pb_add with 512 threads: %v", err)
	}
	if err := checkLaunchBound("pb_add", flatThreads, 1); err == nil {
		t.Error("pb_add with dynamic shared memory it does not use was accepted")
	}
	if err := checkLaunchBound("pb_nothing", 1, 0); err == nil || !strings.Contains(err.Error(), "no launch bound") {
		t.Errorf("unknown kernel: %v", err)
	}
}
