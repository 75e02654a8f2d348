package cuda

import (
	"fmt"
	"sync"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/dl"
)

// The CUDA libraries stay loaded for the life of the process, one binding
// per library file: cuBLAS and NVRTC carry CUDA runtime state that is not
// meant to be unloaded and loaded again (dlclose), and every rank of a
// process (exec.Check runs them all) shares them. A failed load is not
// remembered, so a later call searches again.
var libs struct {
	sync.Mutex
	drivers map[string]*cuda.Driver
	blas    map[string]*cuda.BLAS
	rtc     map[string]*cuda.NVRTC
}

// shared finds spec's library and returns the binding already made for
// that file, or binds it with bind and keeps it.
func shared[T any](prefix string, spec dl.Spec, cache *map[string]T, bind func(*dl.Library) (T, error)) (T, error) {
	var zero T
	lib, err := dl.Find(spec)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", prefix, err)
	}
	libs.Lock()
	defer libs.Unlock()
	if *cache == nil {
		*cache = map[string]T{}
	}
	file := lib.File()
	if b, ok := (*cache)[file]; ok {
		lib.Close() // a second reference to the loaded file
		return b, nil
	}
	b, err := bind(lib)
	if err != nil {
		lib.Close()
		return zero, err
	}
	(*cache)[file] = b
	return b, nil
}

func loadDriver() (*cuda.Driver, error) {
	return shared("cuda", dl.CUDA(), &libs.drivers, cuda.LoadFrom)
}

func loadCUBLAS() (*cuda.BLAS, error) {
	return shared("cublas", dl.CUBLAS(), &libs.blas, cuda.LoadCUBLASFrom)
}

func loadNVRTC() (*cuda.NVRTC, error) {
	return shared("nvrtc", dl.NVRTC(), &libs.rtc, cuda.LoadNVRTCFrom)
}
