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

// driverSymbols in the order of the PBC_* slots in shim.h. The *_v2 names
// are what cuda.h's #defines select (64-bit CUdeviceptr, size_t sizes);
// the unsuffixed cuMemAlloc, cuMemcpyHtoD, … are the 32-bit legacy entry
// points and must not be used. Optional: cuEventElapsedTime_v2 (CUDA 12.8)
// and the graph calls (cuGraphInstantiateWithFlags needs CUDA 11.4).
var driverSymbols = [C.PBC_NUM_SYMS]struct {
	name     string
	optional bool
}{
	C.PBC_GET_ERROR_STRING:        {"cuGetErrorString", false},
	C.PBC_GET_ERROR_NAME:          {"cuGetErrorName", false},
	C.PBC_INIT:                    {"cuInit", false},
	C.PBC_DRIVER_GET_VERSION:      {"cuDriverGetVersion", false},
	C.PBC_DEVICE_GET:              {"cuDeviceGet", false},
	C.PBC_DEVICE_GET_COUNT:        {"cuDeviceGetCount", false},
	C.PBC_DEVICE_GET_NAME:         {"cuDeviceGetName", false},
	C.PBC_DEVICE_GET_ATTRIBUTE:    {"cuDeviceGetAttribute", false},
	C.PBC_DEVICE_TOTAL_MEM:        {"cuDeviceTotalMem_v2", false},
	C.PBC_PRIMARY_CTX_RETAIN:      {"cuDevicePrimaryCtxRetain", false},
	C.PBC_PRIMARY_CTX_RELEASE:     {"cuDevicePrimaryCtxRelease_v2", false},
	C.PBC_CTX_SET_CURRENT:         {"cuCtxSetCurrent", false},
	C.PBC_CTX_GET_CURRENT:         {"cuCtxGetCurrent", false},
	C.PBC_CTX_SYNCHRONIZE:         {"cuCtxSynchronize", false},
	C.PBC_MEM_ALLOC:               {"cuMemAlloc_v2", false},
	C.PBC_MEM_FREE:                {"cuMemFree_v2", false},
	C.PBC_MEM_GET_INFO:            {"cuMemGetInfo_v2", false},
	C.PBC_MEMCPY_HTOD:             {"cuMemcpyHtoD_v2", false},
	C.PBC_MEMCPY_DTOH:             {"cuMemcpyDtoH_v2", false},
	C.PBC_MEMCPY_HTOD_ASYNC:       {"cuMemcpyHtoDAsync_v2", false},
	C.PBC_MEMCPY_DTOH_ASYNC:       {"cuMemcpyDtoHAsync_v2", false},
	C.PBC_MEMCPY_DTOD_ASYNC:       {"cuMemcpyDtoDAsync_v2", false},
	C.PBC_MEMSET_D8:               {"cuMemsetD8_v2", false},
	C.PBC_MEMSET_D8_ASYNC:         {"cuMemsetD8Async", false},
	C.PBC_MEMSET_D32_ASYNC:        {"cuMemsetD32Async", false},
	C.PBC_STREAM_CREATE:           {"cuStreamCreate", false},
	C.PBC_STREAM_DESTROY:          {"cuStreamDestroy_v2", false},
	C.PBC_STREAM_SYNCHRONIZE:      {"cuStreamSynchronize", false},
	C.PBC_EVENT_CREATE:            {"cuEventCreate", false},
	C.PBC_EVENT_DESTROY:           {"cuEventDestroy_v2", false},
	C.PBC_EVENT_RECORD:            {"cuEventRecord", false},
	C.PBC_EVENT_SYNCHRONIZE:       {"cuEventSynchronize", false},
	C.PBC_EVENT_QUERY:             {"cuEventQuery", false},
	C.PBC_EVENT_ELAPSED_TIME:      {"cuEventElapsedTime", false},
	C.PBC_EVENT_ELAPSED_TIME_V2:   {"cuEventElapsedTime_v2", true},
	C.PBC_MODULE_LOAD_DATA:        {"cuModuleLoadData", false},
	C.PBC_MODULE_UNLOAD:           {"cuModuleUnload", false},
	C.PBC_MODULE_GET_FUNCTION:     {"cuModuleGetFunction", false},
	C.PBC_LAUNCH_KERNEL:           {"cuLaunchKernel", false},
	C.PBC_STREAM_BEGIN_CAPTURE:    {"cuStreamBeginCapture_v2", true},
	C.PBC_STREAM_END_CAPTURE:      {"cuStreamEndCapture", true},
	C.PBC_GRAPH_INSTANTIATE:       {"cuGraphInstantiateWithFlags", true},
	C.PBC_GRAPH_LAUNCH:            {"cuGraphLaunch", true},
	C.PBC_GRAPH_EXEC_DESTROY:      {"cuGraphExecDestroy", true},
	C.PBC_GRAPH_DESTROY:           {"cuGraphDestroy", true},
	C.PBC_FUNC_SET_ATTRIBUTE:      {"cuFuncSetAttribute", false},
	C.PBC_FUNC_GET_ATTRIBUTE:      {"cuFuncGetAttribute", false},
	C.PBC_MEM_HOST_ALLOC:          {"cuMemHostAlloc", false},
	C.PBC_MEM_FREE_HOST:           {"cuMemFreeHost", false},
	C.PBC_CTX_SET_LIMIT:           {"cuCtxSetLimit", true},
	C.PBC_CTX_GET_LIMIT:           {"cuCtxGetLimit", true},
	C.PBC_STREAM_SET_ATTRIBUTE:    {"cuStreamSetAttribute", true},
	C.PBC_CTX_RESET_PERSISTING_L2: {"cuCtxResetPersistingL2Cache", true},
}

// graphSlots must all be present for graphs to be used.
var graphSlots = []C.int{C.PBC_STREAM_BEGIN_CAPTURE, C.PBC_STREAM_END_CAPTURE, C.PBC_GRAPH_INSTANTIATE,
	C.PBC_GRAPH_LAUNCH, C.PBC_GRAPH_EXEC_DESTROY, C.PBC_GRAPH_DESTROY}

type drvC struct{ t *C.pbCuda }

// bindDriver looks up every symbol in lib and fills a new table. A missing
// mandatory symbol is an error that names each one missing.
func bindDriver(lib *dl.Library) (drvAPI, error) {
	t := C.pbc_new()
	if t == nil {
		return nil, fmt.Errorf("cuda: out of memory for the symbol table")
	}
	var missing []string
	for slot, s := range driverSymbols {
		p, err := lib.Lookup(s.name)
		if err != nil {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		C.pbc_set(t, C.int(slot), p)
	}
	if len(missing) > 0 {
		C.pbc_free(t)
		return nil, fmt.Errorf("cuda: %s lacks %s (partbench needs a CUDA 11.4 or newer driver)",
			lib.File(), strings.Join(missing, ", "))
	}
	return drvC{t}, nil
}

func (a drvC) free() { C.pbc_free(a.t) }

func (a drvC) hasGraphs() bool {
	for _, s := range graphSlots {
		if C.pbc_has(a.t, s) == 0 {
			return false
		}
	}
	return true
}

func (a drvC) hasElapsedV2() bool { return C.pbc_has(a.t, C.PBC_EVENT_ELAPSED_TIME_V2) != 0 }

func (a drvC) errorString(r Result) (string, Result) {
	var s *C.char
	res := Result(C.pbc_get_error_string(a.t, C.pbCUresult(r), &s))
	if res != Success || s == nil {
		return "", res
	}
	return C.GoString(s), Success
}

func (a drvC) errorName(r Result) (string, Result) {
	var s *C.char
	res := Result(C.pbc_get_error_name(a.t, C.pbCUresult(r), &s))
	if res != Success || s == nil {
		return "", res
	}
	return C.GoString(s), Success
}

func (a drvC) init(flags uint32) Result { return Result(C.pbc_init(a.t, C.uint(flags))) }

func (a drvC) driverGetVersion() (int, Result) {
	var v C.int
	r := C.pbc_driver_get_version(a.t, &v)
	return int(v), Result(r)
}

func (a drvC) deviceGet(ordinal int) (int32, Result) {
	var d C.int
	r := C.pbc_device_get(a.t, &d, C.int(ordinal))
	return int32(d), Result(r)
}

func (a drvC) deviceGetCount() (int, Result) {
	var n C.int
	r := C.pbc_device_get_count(a.t, &n)
	return int(n), Result(r)
}

func (a drvC) deviceGetName(dev int32) (string, Result) {
	var buf [256]C.char
	r := Result(C.pbc_device_get_name(a.t, &buf[0], C.int(len(buf)-1), C.int(dev)))
	if r != Success {
		return "", r
	}
	return C.GoString(&buf[0]), Success
}

func (a drvC) deviceGetAttribute(attr DeviceAttribute, dev int32) (int, Result) {
	var v C.int
	r := C.pbc_device_get_attribute(a.t, &v, C.int(attr), C.int(dev))
	return int(v), Result(r)
}

func (a drvC) deviceTotalMem(dev int32) (int64, Result) {
	var n C.size_t
	r := C.pbc_device_total_mem(a.t, &n, C.int(dev))
	return int64(n), Result(r)
}

func (a drvC) primaryCtxRetain(dev int32) (uintptr, Result) {
	var c C.uintptr_t
	r := C.pbc_primary_ctx_retain(a.t, &c, C.int(dev))
	return uintptr(c), Result(r)
}

func (a drvC) primaryCtxRelease(dev int32) Result {
	return Result(C.pbc_primary_ctx_release(a.t, C.int(dev)))
}

func (a drvC) ctxSetCurrent(ctx uintptr) Result {
	return Result(C.pbc_ctx_set_current(a.t, C.uintptr_t(ctx)))
}

func (a drvC) ctxGetCurrent() (uintptr, Result) {
	var c C.uintptr_t
	r := C.pbc_ctx_get_current(a.t, &c)
	return uintptr(c), Result(r)
}

func (a drvC) ctxSynchronize() Result { return Result(C.pbc_ctx_synchronize(a.t)) }

func (a drvC) memAlloc(bytes int64) (DevicePtr, Result) {
	var p C.uint64_t
	r := C.pbc_mem_alloc(a.t, &p, C.size_t(bytes))
	return DevicePtr(p), Result(r)
}

func (a drvC) memFree(p DevicePtr) Result { return Result(C.pbc_mem_free(a.t, C.uint64_t(p))) }

func (a drvC) memGetInfo() (int64, int64, Result) {
	var free, total C.size_t
	r := C.pbc_mem_get_info(a.t, &free, &total)
	return int64(free), int64(total), Result(r)
}

func (a drvC) memcpyHtoD(dst DevicePtr, src unsafe.Pointer, n int64) Result {
	return Result(C.pbc_memcpy_htod(a.t, C.uint64_t(dst), src, C.size_t(n)))
}

func (a drvC) memcpyDtoH(dst unsafe.Pointer, src DevicePtr, n int64) Result {
	return Result(C.pbc_memcpy_dtoh(a.t, dst, C.uint64_t(src), C.size_t(n)))
}

func (a drvC) memcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n int64, st uintptr) Result {
	return Result(C.pbc_memcpy_htod_async(a.t, C.uint64_t(dst), src, C.size_t(n), C.uintptr_t(st)))
}

func (a drvC) memcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, n int64, st uintptr) Result {
	return Result(C.pbc_memcpy_dtoh_async(a.t, dst, C.uint64_t(src), C.size_t(n), C.uintptr_t(st)))
}

func (a drvC) memcpyDtoDAsync(dst, src DevicePtr, n int64, st uintptr) Result {
	return Result(C.pbc_memcpy_dtod_async(a.t, C.uint64_t(dst), C.uint64_t(src), C.size_t(n), C.uintptr_t(st)))
}

func (a drvC) memsetD8(dst DevicePtr, v byte, n int64) Result {
	return Result(C.pbc_memset_d8(a.t, C.uint64_t(dst), C.uchar(v), C.size_t(n)))
}

func (a drvC) memsetD8Async(dst DevicePtr, v byte, n int64, st uintptr) Result {
	return Result(C.pbc_memset_d8_async(a.t, C.uint64_t(dst), C.uchar(v), C.size_t(n), C.uintptr_t(st)))
}

func (a drvC) memsetD32Async(dst DevicePtr, v uint32, n int64, st uintptr) Result {
	return Result(C.pbc_memset_d32_async(a.t, C.uint64_t(dst), C.uint(v), C.size_t(n), C.uintptr_t(st)))
}

func (a drvC) streamCreate(flags uint32) (uintptr, Result) {
	var s C.uintptr_t
	r := C.pbc_stream_create(a.t, &s, C.uint(flags))
	return uintptr(s), Result(r)
}

func (a drvC) streamDestroy(st uintptr) Result {
	return Result(C.pbc_stream_destroy(a.t, C.uintptr_t(st)))
}

func (a drvC) streamSynchronize(st uintptr) Result {
	return Result(C.pbc_stream_synchronize(a.t, C.uintptr_t(st)))
}

func (a drvC) eventCreate(flags uint32) (uintptr, Result) {
	var e C.uintptr_t
	r := C.pbc_event_create(a.t, &e, C.uint(flags))
	return uintptr(e), Result(r)
}

func (a drvC) eventDestroy(ev uintptr) Result {
	return Result(C.pbc_event_destroy(a.t, C.uintptr_t(ev)))
}

func (a drvC) eventRecord(ev, st uintptr) Result {
	return Result(C.pbc_event_record(a.t, C.uintptr_t(ev), C.uintptr_t(st)))
}

func (a drvC) eventSynchronize(ev uintptr) Result {
	return Result(C.pbc_event_synchronize(a.t, C.uintptr_t(ev)))
}

func (a drvC) eventQuery(ev uintptr) Result { return Result(C.pbc_event_query(a.t, C.uintptr_t(ev))) }

func (a drvC) eventElapsedTime(start, end uintptr) (float32, Result) {
	var ms C.float
	r := C.pbc_event_elapsed_time(a.t, &ms, C.uintptr_t(start), C.uintptr_t(end))
	return float32(ms), Result(r)
}

// moduleLoadData passes image (a PTX text with its terminating NUL, or a
// cubin) for the duration of the call; the driver copies what it keeps.
func (a drvC) moduleLoadData(image []byte) (uintptr, Result) {
	if len(image) == 0 {
		return 0, ErrInvalidImage
	}
	var m C.uintptr_t
	r := C.pbc_module_load_data(a.t, &m, unsafe.Pointer(&image[0]))
	return uintptr(m), Result(r)
}

func (a drvC) moduleUnload(mod uintptr) Result {
	return Result(C.pbc_module_unload(a.t, C.uintptr_t(mod)))
}

func (a drvC) moduleGetFunction(mod uintptr, name string) (uintptr, Result) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.uintptr_t
	r := C.pbc_module_get_function(a.t, &f, C.uintptr_t(mod), cname)
	return uintptr(f), Result(r)
}

func (a drvC) launch(fn uintptr, grid, block Dim3, shared uint32, st uintptr, args []Arg) Result {
	var p *C.uint64_t
	if len(args) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&args[0])) // Arg is a uint64: read during the call only
	}
	return Result(C.pbc_launch(a.t, C.uintptr_t(fn),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(shared), C.uintptr_t(st), p, C.int(len(args))))
}

func (a drvC) streamBeginCapture(st uintptr, mode CaptureMode) Result {
	return Result(C.pbc_stream_begin_capture(a.t, C.uintptr_t(st), C.int(mode)))
}

func (a drvC) streamEndCapture(st uintptr) (uintptr, Result) {
	var g C.uintptr_t
	r := C.pbc_stream_end_capture(a.t, C.uintptr_t(st), &g)
	return uintptr(g), Result(r)
}

func (a drvC) graphInstantiate(g uintptr, flags uint64) (uintptr, Result) {
	var e C.uintptr_t
	r := C.pbc_graph_instantiate(a.t, &e, C.uintptr_t(g), C.ulonglong(flags))
	return uintptr(e), Result(r)
}

func (a drvC) graphLaunch(exec, st uintptr) Result {
	return Result(C.pbc_graph_launch(a.t, C.uintptr_t(exec), C.uintptr_t(st)))
}

func (a drvC) graphExecDestroy(exec uintptr) Result {
	return Result(C.pbc_graph_exec_destroy(a.t, C.uintptr_t(exec)))
}

func (a drvC) graphDestroy(g uintptr) Result { return Result(C.pbc_graph_destroy(a.t, C.uintptr_t(g))) }

// cLayout is the C compiler's view of the sizes that cross.
func cLayout() boundaryLayout {
	return boundaryLayout{
		devPtr: uintptr(C.pb_layout(C.PBL_DEVPTR)), sizeT: uintptr(C.pb_layout(C.PBL_SIZE_T)),
		handle: uintptr(C.pb_layout(C.PBL_HANDLE)), argSlot: uintptr(C.pb_layout(C.PBL_ARG_SLOT)),
		enum: uintptr(C.pb_layout(C.PBL_ENUM)), maxArgs: uintptr(C.pb_layout(C.PBL_MAX_ARGS)),
		apwSize: uintptr(C.pb_layout(C.PBL_APW_SIZE)), apwBase: uintptr(C.pb_layout(C.PBL_APW_BASE)),
		apwBytes: uintptr(C.pb_layout(C.PBL_APW_BYTES)), apwHitRatio: uintptr(C.pb_layout(C.PBL_APW_HIT_RATIO)),
		apwHitProp: uintptr(C.pb_layout(C.PBL_APW_HIT_PROP)), apwMissProp: uintptr(C.pb_layout(C.PBL_APW_MISS_PROP)),
		streamAttrValue: uintptr(C.pb_layout(C.PBL_STREAM_ATTR_VALUE)),
	}
}

func (a drvC) funcSetAttribute(fn uintptr, attr FuncAttribute, v int) Result {
	return Result(C.pbc_func_set_attribute(a.t, C.uintptr_t(fn), C.int(attr), C.int(v)))
}

func (a drvC) funcGetAttribute(fn uintptr, attr FuncAttribute) (int, Result) {
	var v C.int
	r := Result(C.pbc_func_get_attribute(a.t, &v, C.int(attr), C.uintptr_t(fn)))
	return int(v), r
}

func (a drvC) memHostAlloc(bytes int64, flags HostAllocFlags) (unsafe.Pointer, Result) {
	var p unsafe.Pointer
	r := C.pbc_mem_host_alloc(a.t, &p, C.size_t(bytes), C.uint(flags))
	return p, Result(r)
}

func (a drvC) memFreeHost(p unsafe.Pointer) Result { return Result(C.pbc_mem_free_host(a.t, p)) }

// l2Slots must all be present for the persisting-L2 controls.
var l2Slots = []C.int{C.PBC_CTX_SET_LIMIT, C.PBC_CTX_GET_LIMIT, C.PBC_STREAM_SET_ATTRIBUTE, C.PBC_CTX_RESET_PERSISTING_L2}

func (a drvC) hasL2Policy() bool {
	for _, s := range l2Slots {
		if C.pbc_has(a.t, s) == 0 {
			return false
		}
	}
	return true
}

func (a drvC) ctxSetLimit(limit Limit, v int64) Result {
	return Result(C.pbc_ctx_set_limit(a.t, C.int(limit), C.size_t(v)))
}

func (a drvC) ctxGetLimit(limit Limit) (int64, Result) {
	var v C.size_t
	r := Result(C.pbc_ctx_get_limit(a.t, &v, C.int(limit)))
	return int64(v), r
}

func (a drvC) streamSetAccessPolicy(st uintptr, w AccessPolicyWindow) Result {
	cw := C.pbAccessPolicyWindow{
		base_ptr: C.uint64_t(w.BasePtr), num_bytes: C.size_t(w.NumBytes),
		hitRatio: C.float(w.HitRatio), hitProp: C.int(w.HitProp), missProp: C.int(w.MissProp),
	}
	return Result(C.pbc_stream_set_access_policy(a.t, C.uintptr_t(st), &cw))
}

func (a drvC) ctxResetPersistingL2() Result { return Result(C.pbc_ctx_reset_persisting_l2(a.t)) }
