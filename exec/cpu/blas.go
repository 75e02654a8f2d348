package cpu

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/partbench/partbench/cgo/cblas"
)

// BLASEnv chooses the CPU backend's GEMM: "auto" (the default: OpenBLAS
// when the system has it, else gonum's pure-Go sgemm), "openblas" (refuse
// to run without it) or "gonum".
const BLASEnv = "PARTBENCH_BLAS"

// BLASThreadsEnv sets OpenBLAS's threads per rank (default 1: a rank is one
// device, and ranks on one host share its cores, as MatMul's serial tiles
// assume).
const BLASThreadsEnv = "PARTBENCH_BLAS_THREADS"

// gemmImpl is the GEMM every MatMul uses, chosen once per process.
var gemmImpl struct {
	once sync.Once
	lib  *cblas.Library // nil: gonum
	desc string         // what ran, for Describe and results files
	err  error          // PARTBENCH_BLAS asked for what cannot run
}

// chooseGEMM loads OpenBLAS unless PARTBENCH_BLAS says gonum.
func chooseGEMM() {
	g := &gemmImpl
	want := os.Getenv(BLASEnv)
	switch want {
	case "", "auto", "openblas":
	case "gonum":
		g.desc = "gonum sgemm (pure Go, " + BLASEnv + "=gonum)"
		return
	default:
		g.err = fmt.Errorf("cpu: %s=%q: must be auto, openblas or gonum", BLASEnv, want)
		g.desc = "gonum sgemm (pure Go)"
		return
	}
	lib, err := cblas.Load(cblas.Spec())
	if err != nil {
		g.desc = "gonum sgemm (pure Go; no OpenBLAS: install libopenblas0 or set PARTBENCH_BLAS_LIB)"
		if want == "openblas" {
			g.err = fmt.Errorf("cpu: %s=openblas: %w", BLASEnv, err)
		}
		return
	}
	threads := 1
	if v := os.Getenv(BLASThreadsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			g.err = fmt.Errorf("cpu: %s=%q: must be a thread count from 1 to 1024", BLASThreadsEnv, v)
			return
		}
		threads = n
	}
	lib.SetThreads(threads)
	g.lib = lib
	g.desc = fmt.Sprintf("OpenBLAS sgemm (%s, %d thread(s) per rank)", lib.Path(), threads)
}

// GEMM says which GEMM the CPU backend runs ("OpenBLAS sgemm (…)" or
// "gonum sgemm (…)") and whether PARTBENCH_BLAS asked for one that cannot
// run.
func GEMM() (string, error) {
	gemmImpl.once.Do(chooseGEMM)
	return gemmImpl.desc, gemmImpl.err
}

// UseGEMM makes every later MatMul of this process run name ("gonum" or
// "openblas") and returns what restores the choice before it. For tests
// that hold a property of one GEMM's arithmetic (gonum's sums do not depend
// on the row count, so a pipeline alone changes no bit); not safe while
// another goroutine multiplies.
func UseGEMM(name string) (restore func(), err error) {
	gemmImpl.once.Do(chooseGEMM)
	saved := gemmImpl.lib
	savedDesc := gemmImpl.desc
	switch name {
	case "gonum":
		gemmImpl.lib, gemmImpl.desc = nil, "gonum sgemm (pure Go)"
	case "openblas":
		lib, err := cblas.Load(cblas.Spec())
		if err != nil {
			return func() {}, err
		}
		lib.SetThreads(1)
		gemmImpl.lib, gemmImpl.desc = lib, fmt.Sprintf("OpenBLAS sgemm (%s, 1 thread(s) per rank)", lib.Path())
	default:
		return func() {}, fmt.Errorf("cpu: UseGEMM(%q): gonum or openblas", name)
	}
	return func() { gemmImpl.lib, gemmImpl.desc = saved, savedDesc }, nil
}
