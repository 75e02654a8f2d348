//go:build cgo

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/partbench/partbench/cgo/dl"
)

// ltSymbols in the order of the PBLT_* slots in shim.h. Optional:
// cublasLtGetVersion and cublasLtGetStatusString (newer than 11.3).
var ltSymbols = [C.PBLT_NUM_SYMS]struct {
	name     string
	optional bool
}{
	C.PBLT_CREATE:            {"cublasLtCreate", false},
	C.PBLT_DESTROY:           {"cublasLtDestroy", false},
	C.PBLT_DESC_CREATE:       {"cublasLtMatmulDescCreate", false},
	C.PBLT_DESC_DESTROY:      {"cublasLtMatmulDescDestroy", false},
	C.PBLT_DESC_SET:          {"cublasLtMatmulDescSetAttribute", false},
	C.PBLT_LAYOUT_CREATE:     {"cublasLtMatrixLayoutCreate", false},
	C.PBLT_LAYOUT_DESTROY:    {"cublasLtMatrixLayoutDestroy", false},
	C.PBLT_LAYOUT_SET:        {"cublasLtMatrixLayoutSetAttribute", false},
	C.PBLT_PREF_CREATE:       {"cublasLtMatmulPreferenceCreate", false},
	C.PBLT_PREF_DESTROY:      {"cublasLtMatmulPreferenceDestroy", false},
	C.PBLT_PREF_SET:          {"cublasLtMatmulPreferenceSetAttribute", false},
	C.PBLT_HEURISTIC:         {"cublasLtMatmulAlgoGetHeuristic", false},
	C.PBLT_MATMUL:            {"cublasLtMatmul", false},
	C.PBLT_GET_VERSION:       {"cublasLtGetVersion", true},
	C.PBLT_GET_STATUS_STRING: {"cublasLtGetStatusString", true},
}

type ltC struct{ t *C.pbLt }

func bindLt(lib *dl.Library) (ltAPI, error) {
	t := C.pblt_new()
	if t == nil {
		return nil, fmt.Errorf("cublaslt: out of memory for the symbol table")
	}
	var missing []string
	for slot, s := range ltSymbols {
		p, err := lib.Lookup(s.name)
		if err != nil {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		C.pblt_set(t, C.int(slot), p)
	}
	if len(missing) > 0 {
		C.pblt_free(t)
		return nil, fmt.Errorf("cublaslt: %s lacks %s (partbench needs cuBLASLt 11.3 or newer)",
			lib.File(), strings.Join(missing, ", "))
	}
	return ltC{t}, nil
}

func (a ltC) free()        { C.pblt_free(a.t) }
func (a ltC) version() int { return int(C.pblt_get_version(a.t)) }

func (a ltC) statusString(s BLASStatus) string {
	return C.GoString(C.pblt_get_status_string(a.t, C.pbBlasStatus(s))) // NULL → ""
}

func (a ltC) create() (uintptr, BLASStatus) {
	var h C.uintptr_t
	r := C.pblt_create(a.t, &h)
	return uintptr(h), BLASStatus(r)
}

func (a ltC) destroy(h uintptr) BLASStatus { return BLASStatus(C.pblt_destroy(a.t, C.uintptr_t(h))) }

func (a ltC) descCreate(compute ComputeType, scale DataType) (uintptr, BLASStatus) {
	var d C.uintptr_t
	r := C.pblt_desc_create(a.t, &d, C.int(compute), C.int(scale))
	return uintptr(d), BLASStatus(r)
}

func (a ltC) descDestroy(d uintptr) BLASStatus {
	return BLASStatus(C.pblt_desc_destroy(a.t, C.uintptr_t(d)))
}

func (a ltC) descSet(d uintptr, attr int, v uint64, size int) BLASStatus {
	return BLASStatus(C.pblt_desc_set(a.t, C.uintptr_t(d), C.int(attr), C.uint64_t(v), C.size_t(size)))
}

func (a ltC) layoutCreate(t DataType, rows, cols, ld int) (uintptr, BLASStatus) {
	var l C.uintptr_t
	r := C.pblt_layout_create(a.t, &l, C.int(t), C.uint64_t(rows), C.uint64_t(cols), C.int64_t(ld))
	return uintptr(l), BLASStatus(r)
}

func (a ltC) layoutDestroy(l uintptr) BLASStatus {
	return BLASStatus(C.pblt_layout_destroy(a.t, C.uintptr_t(l)))
}

func (a ltC) layoutSet(l uintptr, attr int, v uint64, size int) BLASStatus {
	return BLASStatus(C.pblt_layout_set(a.t, C.uintptr_t(l), C.int(attr), C.uint64_t(v), C.size_t(size)))
}

func (a ltC) prefCreate() (uintptr, BLASStatus) {
	var p C.uintptr_t
	r := C.pblt_pref_create(a.t, &p)
	return uintptr(p), BLASStatus(r)
}

func (a ltC) prefDestroy(p uintptr) BLASStatus {
	return BLASStatus(C.pblt_pref_destroy(a.t, C.uintptr_t(p)))
}

func (a ltC) prefSet(p uintptr, attr int, v uint64, size int) BLASStatus {
	return BLASStatus(C.pblt_pref_set(a.t, C.uintptr_t(p), C.int(attr), C.uint64_t(v), C.size_t(size)))
}

// heuristic asks for one algorithm: its 8 words, workspace bytes, and how
// many the library returned (0 or 1).
func (a ltC) heuristic(h, desc, la, lb, lc, pref uintptr) ([8]uint64, int64, int, BLASStatus) {
	res := (*C.pbLtHeuristic)(C.calloc(1, C.size_t(unsafe.Sizeof(C.pbLtHeuristic{}))))
	defer C.free(unsafe.Pointer(res))
	var n C.int
	r := C.pblt_heuristic(a.t, C.uintptr_t(h), C.uintptr_t(desc), C.uintptr_t(la), C.uintptr_t(lb), C.uintptr_t(lc),
		C.uintptr_t(lc), C.uintptr_t(pref), 1, res, &n)
	var algo [8]uint64
	for i := range algo {
		algo[i] = uint64(res.algo[i])
	}
	if BLASStatus(r) == BLASSuccess && n > 0 && BLASStatus(res.state) != BLASSuccess {
		return algo, 0, 0, BLASSuccess // the one result is not usable
	}
	return algo, int64(res.workspaceSize), int(n), BLASStatus(r)
}

func (a ltC) matmul(h, desc uintptr, pa DevicePtr, la uintptr, pb DevicePtr, lb uintptr, pd DevicePtr, ld uintptr,
	algo *[8]uint64, ws DevicePtr, wsBytes int64, st uintptr) BLASStatus {
	calgo := (*C.uint64_t)(C.malloc(C.size_t(8 * len(algo))))
	defer C.free(unsafe.Pointer(calgo))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(calgo)), len(algo)), algo[:])
	return BLASStatus(C.pblt_matmul(a.t, C.uintptr_t(h), C.uintptr_t(desc), 1, C.uint64_t(pa), C.uintptr_t(la),
		C.uint64_t(pb), C.uintptr_t(lb), 0, C.uint64_t(pd), C.uintptr_t(ld), C.uint64_t(pd), C.uintptr_t(ld),
		calgo, C.uint64_t(ws), C.size_t(wsBytes), C.uintptr_t(st)))
}

// ltLayout is C's view of cublasLtMatmulHeuristicResult_t (pblt_layout).
func ltLayout(what int) uintptr { return uintptr(C.pblt_layout(C.int(what))) }
