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

	"github.com/partbench/partbench/cgo/dl"
)

// blasSymbols in the order of the PBB_* slots in shim.h: the _v2 names
// cublas_v2.h selects. Optional: cublasSetWorkspace_v2 (cuBLAS 11.4),
// cublasGetStatusString and cublasGetStatusName (11.4.2).
var blasSymbols = [C.PBB_NUM_SYMS]struct {
	name     string
	optional bool
}{
	C.PBB_CREATE:            {"cublasCreate_v2", false},
	C.PBB_DESTROY:           {"cublasDestroy_v2", false},
	C.PBB_GET_VERSION:       {"cublasGetVersion_v2", false},
	C.PBB_SET_STREAM:        {"cublasSetStream_v2", false},
	C.PBB_SET_WORKSPACE:     {"cublasSetWorkspace_v2", true},
	C.PBB_SET_MATH_MODE:     {"cublasSetMathMode", false},
	C.PBB_GEMM_EX:           {"cublasGemmEx", false},
	C.PBB_GET_STATUS_STRING: {"cublasGetStatusString", true},
	C.PBB_GET_STATUS_NAME:   {"cublasGetStatusName", true},
	// cuBLAS 11 has it; optional so a library without it still loads
	// (the backend then keeps its own attention kernels).
	C.PBB_GEMM_STRIDED_BATCHED_EX: {"cublasGemmStridedBatchedEx", true},
}

type blasC struct{ t *C.pbBlas }

func bindBLAS(lib *dl.Library) (blasAPI, error) {
	t := C.pbb_new()
	if t == nil {
		return nil, fmt.Errorf("cublas: out of memory for the symbol table")
	}
	var missing []string
	for slot, s := range blasSymbols {
		p, err := lib.Lookup(s.name)
		if err != nil {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		C.pbb_set(t, C.int(slot), p)
	}
	if len(missing) > 0 {
		C.pbb_free(t)
		return nil, fmt.Errorf("cublas: %s lacks %s (partbench needs cuBLAS 11 or newer)",
			lib.File(), strings.Join(missing, ", "))
	}
	return blasC{t}, nil
}

func (a blasC) free()              { C.pbb_free(a.t) }
func (a blasC) hasWorkspace() bool { return C.pbb_has(a.t, C.PBB_SET_WORKSPACE) != 0 }

func (a blasC) statusString(s BLASStatus) string {
	return C.GoString(C.pbb_get_status_string(a.t, C.pbBlasStatus(s))) // NULL → ""
}

func (a blasC) create() (uintptr, BLASStatus) {
	var h C.uintptr_t
	r := C.pbb_create(a.t, &h)
	return uintptr(h), BLASStatus(r)
}

func (a blasC) destroy(h uintptr) BLASStatus { return BLASStatus(C.pbb_destroy(a.t, C.uintptr_t(h))) }

func (a blasC) getVersion(h uintptr) (int, BLASStatus) {
	var v C.int
	r := C.pbb_get_version(a.t, C.uintptr_t(h), &v)
	return int(v), BLASStatus(r)
}

func (a blasC) setStream(h, st uintptr) BLASStatus {
	return BLASStatus(C.pbb_set_stream(a.t, C.uintptr_t(h), C.uintptr_t(st)))
}

func (a blasC) setWorkspace(h uintptr, ws DevicePtr, bytes int64) BLASStatus {
	return BLASStatus(C.pbb_set_workspace(a.t, C.uintptr_t(h), C.uint64_t(ws), C.size_t(bytes)))
}

func (a blasC) setMathMode(h uintptr, mode MathMode) BLASStatus {
	return BLASStatus(C.pbb_set_math_mode(a.t, C.uintptr_t(h), C.int(mode)))
}

func (a blasC) hasStridedBatched() bool {
	return C.pbb_has(a.t, C.PBB_GEMM_STRIDED_BATCHED_EX) != 0
}

func (a blasC) gemmStridedBatchedEx(h uintptr, g GemmEx, sa, sb, sc int64, batch int) BLASStatus {
	return BLASStatus(C.pbb_gemm_strided_batched_ex(a.t, C.uintptr_t(h), C.int(g.TransA), C.int(g.TransB),
		C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha),
		C.uint64_t(g.A), C.int(g.AType), C.int(g.LDA), C.longlong(sa),
		C.uint64_t(g.B), C.int(g.BType), C.int(g.LDB), C.longlong(sb),
		C.float(g.Beta), C.uint64_t(g.C), C.int(g.CType), C.int(g.LDC), C.longlong(sc),
		C.int(batch), C.int(g.Compute), C.int(g.Algo)))
}

func (a blasC) gemmEx(h uintptr, g GemmEx) BLASStatus {
	return BLASStatus(C.pbb_gemm_ex(a.t, C.uintptr_t(h), C.int(g.TransA), C.int(g.TransB),
		C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha),
		C.uint64_t(g.A), C.int(g.AType), C.int(g.LDA),
		C.uint64_t(g.B), C.int(g.BType), C.int(g.LDB),
		C.float(g.Beta), C.uint64_t(g.C), C.int(g.CType), C.int(g.LDC),
		C.int(g.Compute), C.int(g.Algo)))
}
