//go:build cgo

package cblas

/*
#include <stddef.h>

// CBLAS's enums are fixed numbers (cblas.h): CblasRowMajor = 101,
// CblasNoTrans = 111. The prototypes are declared here, not included, so
// nothing is linked at build time.
typedef void (*pb_sgemm_fn)(int order, int transa, int transb, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*pb_set_threads_fn)(int n);
typedef int (*pb_get_threads_fn)(void);

static void pb_sgemm(void *fn, int m, int n, int k, const float *a, const float *b, float *c) {
	((pb_sgemm_fn)fn)(101, 111, 111, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
static void pb_set_threads(void *fn, int n) { ((pb_set_threads_fn)fn)(n); }
static int pb_get_threads(void *fn) { return ((pb_get_threads_fn)fn)(); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/partbench/partbench/cgo/dl"
)

// Library is a loaded CBLAS with its sgemm.
type Library struct {
	lib        *dl.Library
	sgemm      unsafe.Pointer
	setThreads unsafe.Pointer // openblas_set_num_threads, nil where absent
	getThreads unsafe.Pointer // openblas_get_num_threads
}

// Load finds the library by spec (Spec for OpenBLAS) and looks up
// cblas_sgemm; an error names every place searched.
func Load(spec dl.Spec) (*Library, error) {
	lib, err := dl.Find(spec)
	if err != nil {
		return nil, err
	}
	f, err := lib.Lookup("cblas_sgemm")
	if err != nil {
		lib.Close()
		return nil, fmt.Errorf("cblas: %s has no cblas_sgemm: %w", lib.Path(), err)
	}
	l := &Library{lib: lib, sgemm: f}
	l.setThreads, _ = lib.Lookup("openblas_set_num_threads")
	l.getThreads, _ = lib.Lookup("openblas_get_num_threads")
	return l, nil
}

// Path is the file loaded.
func (l *Library) Path() string { return l.lib.Path() }

// SetThreads sets the library's thread count where it has one
// (OpenBLAS); false when it cannot.
func (l *Library) SetThreads(n int) bool {
	if l.setThreads == nil || n < 1 {
		return false
	}
	C.pb_set_threads(l.setThreads, C.int(n))
	return true
}

// Threads is the library's thread count (0 when it does not say).
func (l *Library) Threads() int {
	if l.getThreads == nil {
		return 0
	}
	return int(C.pb_get_threads(l.getThreads))
}

// Sgemm computes c[m, n] = a[m, k] @ b[k, n], row-major, no transposes.
// The slices must hold m·k, k·n and m·n elements.
func (l *Library) Sgemm(m, n, k int, a, b, c []float32) {
	if m == 0 || n == 0 {
		return
	}
	if len(a) < m*k || len(b) < k*n || len(c) < m*n {
		panic(fmt.Sprintf("cblas: sgemm %d×%d×%d on slices of %d, %d, %d elements", m, n, k, len(a), len(b), len(c)))
	}
	if k == 0 {
		clear(c[:m*n])
		return
	}
	C.pb_sgemm(l.sgemm, C.int(m), C.int(n), C.int(k), (*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])), (*C.float)(unsafe.Pointer(&c[0])))
}
