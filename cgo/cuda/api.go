package cuda

import "unsafe"

// drvAPI is the driver as the Go side sees it: one method per entry point,
// handles as uintptr, device pointers as DevicePtr. capi_driver.go
// implements it through the C shim; a build without cgo has no
// implementation, so nothing past Load can be reached there.
type drvAPI interface {
	free()
	hasGraphs() bool
	hasElapsedV2() bool
	errorString(r Result) (string, Result)
	errorName(r Result) (string, Result)
	init(flags uint32) Result
	driverGetVersion() (int, Result)
	deviceGet(ordinal int) (int32, Result)
	deviceGetCount() (int, Result)
	deviceGetName(dev int32) (string, Result)
	deviceGetAttribute(attr DeviceAttribute, dev int32) (int, Result)
	deviceTotalMem(dev int32) (int64, Result)
	primaryCtxRetain(dev int32) (uintptr, Result)
	primaryCtxRelease(dev int32) Result
	ctxSetCurrent(ctx uintptr) Result
	ctxGetCurrent() (uintptr, Result)
	ctxSynchronize() Result
	memAlloc(bytes int64) (DevicePtr, Result)
	memFree(p DevicePtr) Result
	memHostAlloc(bytes int64, flags HostAllocFlags) (unsafe.Pointer, Result)
	memFreeHost(p unsafe.Pointer) Result
	hasL2Policy() bool
	ctxSetLimit(limit Limit, v int64) Result
	ctxGetLimit(limit Limit) (int64, Result)
	streamSetAccessPolicy(st uintptr, w AccessPolicyWindow) Result
	ctxResetPersistingL2() Result
	memGetInfo() (free, total int64, r Result)
	memcpyHtoD(dst DevicePtr, src unsafe.Pointer, n int64) Result
	memcpyDtoH(dst unsafe.Pointer, src DevicePtr, n int64) Result
	memcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n int64, st uintptr) Result
	memcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, n int64, st uintptr) Result
	memcpyDtoDAsync(dst, src DevicePtr, n int64, st uintptr) Result
	memsetD8(dst DevicePtr, v byte, n int64) Result
	memsetD8Async(dst DevicePtr, v byte, n int64, st uintptr) Result
	memsetD32Async(dst DevicePtr, v uint32, n int64, st uintptr) Result
	streamCreate(flags uint32) (uintptr, Result)
	streamDestroy(st uintptr) Result
	streamSynchronize(st uintptr) Result
	eventCreate(flags uint32) (uintptr, Result)
	eventDestroy(ev uintptr) Result
	eventRecord(ev, st uintptr) Result
	eventSynchronize(ev uintptr) Result
	eventQuery(ev uintptr) Result
	eventElapsedTime(start, end uintptr) (float32, Result)
	moduleLoadData(image []byte) (uintptr, Result)
	moduleUnload(mod uintptr) Result
	moduleGetFunction(mod uintptr, name string) (uintptr, Result)
	launch(fn uintptr, grid, block Dim3, shared uint32, st uintptr, args []Arg) Result
	streamBeginCapture(st uintptr, mode CaptureMode) Result
	streamEndCapture(st uintptr) (uintptr, Result)
	graphInstantiate(g uintptr, flags uint64) (uintptr, Result)
	graphLaunch(exec, st uintptr) Result
	graphExecDestroy(exec uintptr) Result
	graphDestroy(g uintptr) Result
	funcSetAttribute(fn uintptr, attr FuncAttribute, v int) Result
	funcGetAttribute(fn uintptr, attr FuncAttribute) (int, Result)
}

// blasAPI is cuBLAS as the Go side sees it.
type blasAPI interface {
	free()
	hasWorkspace() bool
	statusString(s BLASStatus) string // "" when the library lacks cublasGetStatusString
	create() (uintptr, BLASStatus)
	destroy(h uintptr) BLASStatus
	getVersion(h uintptr) (int, BLASStatus)
	setStream(h, st uintptr) BLASStatus
	setWorkspace(h uintptr, ws DevicePtr, bytes int64) BLASStatus
	setMathMode(h uintptr, mode MathMode) BLASStatus
	gemmEx(h uintptr, g GemmEx) BLASStatus
	hasStridedBatched() bool
	gemmStridedBatchedEx(h uintptr, g GemmEx, strideA, strideB, strideC int64, batch int) BLASStatus
}

// rtcAPI is NVRTC as the Go side sees it.
type rtcAPI interface {
	free()
	hasCUBIN() bool
	errorString(r NVRTCResult) string
	version() (major, minor int, r NVRTCResult)
	createProgram(src, name string) (uintptr, NVRTCResult)
	destroyProgram(prog uintptr) NVRTCResult
	compileProgram(prog uintptr, opts []string) NVRTCResult
	ptx(prog uintptr) ([]byte, NVRTCResult)
	cubin(prog uintptr) ([]byte, NVRTCResult)
	programLog(prog uintptr) (string, NVRTCResult)
}

// boundaryLayout is the C compiler's view of the sizes that cross into the
// libraries, for the layout test.
type boundaryLayout struct {
	devPtr, sizeT, handle, argSlot, enum, maxArgs uintptr
	// CUaccessPolicyWindow's size and field offsets; CUstreamAttrValue's size.
	apwSize, apwBase, apwBytes, apwHitRatio, apwHitProp, apwMissProp uintptr
	streamAttrValue                                                  uintptr
}
