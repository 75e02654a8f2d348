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

// nvrtcSymbols in the order of the PBR_* slots in shim.h. Optional:
// nvrtcGetCUBINSize and nvrtcGetCUBIN (NVRTC 11.1).
var nvrtcSymbols = [C.PBR_NUM_SYMS]struct {
	name     string
	optional bool
}{
	C.PBR_GET_ERROR_STRING:     {"nvrtcGetErrorString", false},
	C.PBR_VERSION:              {"nvrtcVersion", false},
	C.PBR_CREATE_PROGRAM:       {"nvrtcCreateProgram", false},
	C.PBR_DESTROY_PROGRAM:      {"nvrtcDestroyProgram", false},
	C.PBR_COMPILE_PROGRAM:      {"nvrtcCompileProgram", false},
	C.PBR_GET_PTX_SIZE:         {"nvrtcGetPTXSize", false},
	C.PBR_GET_PTX:              {"nvrtcGetPTX", false},
	C.PBR_GET_CUBIN_SIZE:       {"nvrtcGetCUBINSize", true},
	C.PBR_GET_CUBIN:            {"nvrtcGetCUBIN", true},
	C.PBR_GET_PROGRAM_LOG_SIZE: {"nvrtcGetProgramLogSize", false},
	C.PBR_GET_PROGRAM_LOG:      {"nvrtcGetProgramLog", false},
}

type rtcC struct{ t *C.pbRtc }

func bindNVRTC(lib *dl.Library) (rtcAPI, error) {
	t := C.pbr_new()
	if t == nil {
		return nil, fmt.Errorf("nvrtc: out of memory for the symbol table")
	}
	var missing []string
	for slot, s := range nvrtcSymbols {
		p, err := lib.Lookup(s.name)
		if err != nil {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		C.pbr_set(t, C.int(slot), p)
	}
	if len(missing) > 0 {
		C.pbr_free(t)
		return nil, fmt.Errorf("nvrtc: %s lacks %s", lib.File(), strings.Join(missing, ", "))
	}
	return rtcC{t}, nil
}

func (a rtcC) free() { C.pbr_free(a.t) }

func (a rtcC) hasCUBIN() bool {
	return C.pbr_has(a.t, C.PBR_GET_CUBIN_SIZE) != 0 && C.pbr_has(a.t, C.PBR_GET_CUBIN) != 0
}

func (a rtcC) errorString(r NVRTCResult) string {
	return C.GoString(C.pbr_get_error_string(a.t, C.pbRtcResult(r)))
}

func (a rtcC) version() (int, int, NVRTCResult) {
	var major, minor C.int
	r := C.pbr_version(a.t, &major, &minor)
	return int(major), int(minor), NVRTCResult(r)
}

func (a rtcC) createProgram(src, name string) (uintptr, NVRTCResult) {
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var p C.uintptr_t
	r := C.pbr_create_program(a.t, &p, csrc, cname)
	return uintptr(p), NVRTCResult(r)
}

func (a rtcC) destroyProgram(prog uintptr) NVRTCResult {
	return NVRTCResult(C.pbr_destroy_program(a.t, C.uintptr_t(prog)))
}

// compileProgram passes the options as a C array of C strings.
func (a rtcC) compileProgram(prog uintptr, opts []string) NVRTCResult {
	n := len(opts)
	var arr **C.char
	if n > 0 {
		arr = (**C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		defer C.free(unsafe.Pointer(arr))
		cs := unsafe.Slice(arr, n)
		for i, o := range opts {
			cs[i] = C.CString(o)
		}
		defer func() {
			for _, c := range cs {
				C.free(unsafe.Pointer(c))
			}
		}()
	}
	return NVRTCResult(C.pbr_compile_program(a.t, C.uintptr_t(prog), C.int(n), arr))
}

func (a rtcC) ptx(prog uintptr) ([]byte, NVRTCResult) {
	var n C.size_t
	if r := NVRTCResult(C.pbr_get_ptx_size(a.t, C.uintptr_t(prog), &n)); r != NVRTCSuccess {
		return nil, r
	}
	buf := make([]byte, int(n)) // the size includes the terminating NUL
	if n == 0 {
		return buf, NVRTCSuccess
	}
	r := NVRTCResult(C.pbr_get_ptx(a.t, C.uintptr_t(prog), (*C.char)(unsafe.Pointer(&buf[0]))))
	return buf, r
}

func (a rtcC) cubin(prog uintptr) ([]byte, NVRTCResult) {
	var n C.size_t
	if r := NVRTCResult(C.pbr_get_cubin_size(a.t, C.uintptr_t(prog), &n)); r != NVRTCSuccess {
		return nil, r
	}
	buf := make([]byte, int(n))
	if n == 0 {
		return buf, NVRTCSuccess
	}
	r := NVRTCResult(C.pbr_get_cubin(a.t, C.uintptr_t(prog), (*C.char)(unsafe.Pointer(&buf[0]))))
	return buf, r
}

func (a rtcC) programLog(prog uintptr) (string, NVRTCResult) {
	var n C.size_t
	if r := NVRTCResult(C.pbr_get_program_log_size(a.t, C.uintptr_t(prog), &n)); r != NVRTCSuccess {
		return "", r
	}
	if n == 0 {
		return "", NVRTCSuccess
	}
	buf := make([]byte, int(n))
	r := NVRTCResult(C.pbr_get_program_log(a.t, C.uintptr_t(prog), (*C.char)(unsafe.Pointer(&buf[0]))))
	return strings.TrimRight(string(buf), "\x00"), r
}
