package cudatest

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

//go:embed testdata/fakecuda.c testdata/fakecublas.c testdata/fakenvrtc.c testdata/fakecublaslt.c
var sources embed.FS

// Trace is the code for which the fakes' error-text calls return a trace
// of the last call's arguments: cuGetErrorString(Trace) and
// cublasGetStatusString(Trace); cuGetErrorName(Trace) returns the fake
// driver's counters ("launches=N graphLaunches=N captured=N hostAllocs=N hostFrees=N").
const Trace = 0x7ffffff0

// Libs are the paths of one build of the fakes, under their real sonames.
type Libs struct {
	Dir    string
	Driver string // libcuda.so.1
	CUBLAS string // libcublas.so.13
	NVRTC  string // libnvrtc.so.13
	// CUBLASLt is libcublasLt.so.13 (FAKE_LT_NO_ALGO: its heuristic finds
	// no algorithm; FAKE_LT_GELU_ERF: its GELU epilogues are erf's GELU).
	CUBLASLt string
}

// Build compiles the four fakes with the given -D defines (FAKE_OLD,
// FAKE_NO_ALLOC, FAKE_NO_DEVICE, FAKE_BAD_GRAPH; each fake ignores the ones
// it does not know) and writes them into a new temporary folder. Each set
// of defines is compiled once per process. It skips the test when gcc is
// missing.
func Build(t testing.TB, defines ...string) Libs {
	t.Helper()
	bins, err := compiled(defines)
	if errors.Is(err, exec.ErrNotFound) {
		t.Skipf("no gcc to build the fake CUDA libraries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l := Libs{
		Dir:      dir,
		Driver:   filepath.Join(dir, "libcuda.so.1"),
		CUBLAS:   filepath.Join(dir, "libcublas.so.13"),
		NVRTC:    filepath.Join(dir, "libnvrtc.so.13"),
		CUBLASLt: filepath.Join(dir, "libcublasLt.so.13"),
	}
	for i, p := range []string{l.Driver, l.CUBLAS, l.NVRTC, l.CUBLASLt} {
		if err := os.WriteFile(p, bins[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

var (
	cacheMu sync.Mutex
	cache   = map[string][numFakes][]byte{}
)

// numFakes is the driver, cuBLAS, NVRTC and cuBLASLt.
const numFakes = 4

// compiled returns the four fakes built with defines, compiling them on
// first use.
func compiled(defines []string) ([numFakes][]byte, error) {
	key := strings.Join(defines, " ")
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if b, ok := cache[key]; ok {
		return b, nil
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return [numFakes][]byte{}, err
	}
	dir, err := os.MkdirTemp("", "cudatest")
	if err != nil {
		return [numFakes][]byte{}, err
	}
	defer os.RemoveAll(dir)
	var out [numFakes][]byte
	errs := make([]error, numFakes)
	var wg sync.WaitGroup
	for i, src := range []string{"fakecuda.c", "fakecublas.c", "fakenvrtc.c", "fakecublaslt.c"} {
		code, err := sources.ReadFile("testdata/" + src)
		if err != nil {
			return out, err
		}
		cfile, so := filepath.Join(dir, src), filepath.Join(dir, src+".so")
		if err := os.WriteFile(cfile, code, 0o644); err != nil {
			return out, err
		}
		args := []string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", so, cfile}
		for _, d := range defines {
			args = append(args, "-D"+d)
		}
		args = append(args, "-lpthread", "-lm")
		wg.Go(func() {
			if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("gcc %v: %v\n%s", args, err, b)
				return
			}
			out[i], errs[i] = os.ReadFile(so)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	cache[key] = out
	return out, nil
}

// Setenv points partbench's library search at the fakes for the test's
// duration (PARTBENCH_CUDA_LIB, PARTBENCH_CUBLAS_LIB, PARTBENCH_NVRTC_LIB,
// PARTBENCH_CUBLASLT_LIB).
func (l Libs) Setenv(t testing.TB) {
	t.Helper()
	t.Setenv("PARTBENCH_CUDA_LIB", l.Driver)
	t.Setenv("PARTBENCH_CUBLAS_LIB", l.CUBLAS)
	t.Setenv("PARTBENCH_NVRTC_LIB", l.NVRTC)
	t.Setenv("PARTBENCH_CUBLASLT_LIB", l.CUBLASLt)
}

// Counters parses the fake driver's counters (cuGetErrorName(Trace):
// "launches=N graphLaunches=N …") into a map by name.
func Counters(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("cudatest: counter %q is not name=value", f)
		}
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
			return nil, fmt.Errorf("cudatest: counter %q: %v", f, err)
		}
		out[k] = n
	}
	return out, nil
}
