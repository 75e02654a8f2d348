package cuda

import (
	"fmt"
	"strings"
)

// Result is a CUresult. Its Error method needs no library, so errors read
// the same before the driver is loaded (or when it never loads).
type Result int32

// CUresult values from the public cuda.h (the ones partbench names or is
// likely to meet; Error prints any other code by number).
const (
	Success                  Result = 0
	ErrInvalidValue          Result = 1
	ErrOutOfMemory           Result = 2
	ErrNotInitialized        Result = 3
	ErrDeinitialized         Result = 4
	ErrStubLibrary           Result = 34
	ErrDeviceUnavailable     Result = 46
	ErrNoDevice              Result = 100
	ErrInvalidDevice         Result = 101
	ErrInvalidImage          Result = 200
	ErrInvalidContext        Result = 201
	ErrNoBinaryForGPU        Result = 209
	ErrInvalidPTX            Result = 218
	ErrUnsupportedPTXVersion Result = 222
	ErrInvalidSource         Result = 300
	ErrInvalidHandle         Result = 400
	ErrIllegalState          Result = 401
	ErrNotFound              Result = 500
	ErrNotReady              Result = 600
	ErrIllegalAddress        Result = 700
	ErrLaunchOutOfResources  Result = 701
	ErrLaunchTimeout         Result = 702
	ErrLaunchFailed          Result = 719
	ErrNotPermitted          Result = 800
	ErrNotSupported          Result = 801
	ErrSystemDriverMismatch  Result = 803
	ErrStreamCaptureUnsupp   Result = 900
	ErrStreamCaptureInvalid  Result = 901
	ErrStreamCaptureWrongThr Result = 908
	ErrUnknown               Result = 999
)

var resultText = map[Result]struct{ name, text string }{
	Success:                  {"CUDA_SUCCESS", "no error"},
	ErrInvalidValue:          {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	ErrOutOfMemory:           {"CUDA_ERROR_OUT_OF_MEMORY", "out of device memory"},
	ErrNotInitialized:        {"CUDA_ERROR_NOT_INITIALIZED", "driver not initialized (cuInit not called)"},
	ErrDeinitialized:         {"CUDA_ERROR_DEINITIALIZED", "driver is shutting down"},
	ErrStubLibrary:           {"CUDA_ERROR_STUB_LIBRARY", "the toolkit's link stub was loaded instead of the driver's libcuda"},
	ErrDeviceUnavailable:     {"CUDA_ERROR_DEVICE_UNAVAILABLE", "device busy or unavailable (exclusive or prohibited compute mode)"},
	ErrNoDevice:              {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is visible"},
	ErrInvalidDevice:         {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	ErrInvalidImage:          {"CUDA_ERROR_INVALID_IMAGE", "invalid kernel image"},
	ErrInvalidContext:        {"CUDA_ERROR_INVALID_CONTEXT", "no valid context is current on this thread"},
	ErrNoBinaryForGPU:        {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image for this GPU's architecture"},
	ErrInvalidPTX:            {"CUDA_ERROR_INVALID_PTX", "ptx failed to compile"},
	ErrUnsupportedPTXVersion: {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "ptx is newer than this driver supports"},
	ErrInvalidSource:         {"CUDA_ERROR_INVALID_SOURCE", "invalid kernel source"},
	ErrInvalidHandle:         {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	ErrIllegalState:          {"CUDA_ERROR_ILLEGAL_STATE", "operation not allowed in the current state"},
	ErrNotFound:              {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	ErrNotReady:              {"CUDA_ERROR_NOT_READY", "work not yet complete"},
	ErrIllegalAddress:        {"CUDA_ERROR_ILLEGAL_ADDRESS", "a kernel accessed an illegal address"},
	ErrLaunchOutOfResources:  {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	ErrLaunchTimeout:         {"CUDA_ERROR_LAUNCH_TIMEOUT", "kernel timed out"},
	ErrLaunchFailed:          {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	ErrNotPermitted:          {"CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	ErrNotSupported:          {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported on this device or driver"},
	ErrSystemDriverMismatch:  {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "libcuda does not match the kernel driver version"},
	ErrStreamCaptureUnsupp:   {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted while a stream is capturing"},
	ErrStreamCaptureInvalid:  {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "stream capture was invalidated by an earlier error"},
	ErrStreamCaptureWrongThr: {"CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "capture ended on another thread than it began"},
	ErrUnknown:               {"CUDA_ERROR_UNKNOWN", "unknown error"},
}

// Name is the C enumerator name ("CUDA_ERROR_OUT_OF_MEMORY"), from
// partbench's own table.
func (r Result) Name() string {
	if t, ok := resultText[r]; ok {
		return t.name
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// Error reads "CUDA_ERROR_OUT_OF_MEMORY (2): out of device memory".
func (r Result) Error() string {
	if t, ok := resultText[r]; ok {
		return fmt.Sprintf("%s (%d): %s", t.name, int32(r), t.text)
	}
	return fmt.Sprintf("unknown cuda result %d", int32(r))
}

// BLASStatus is a cublasStatus_t.
type BLASStatus int32

// cublasStatus_t values from the public cublas_api.h.
const (
	BLASSuccess         BLASStatus = 0
	BLASNotInitialized  BLASStatus = 1
	BLASAllocFailed     BLASStatus = 3
	BLASInvalidValue    BLASStatus = 7
	BLASArchMismatch    BLASStatus = 8
	BLASMappingError    BLASStatus = 11
	BLASExecutionFailed BLASStatus = 13
	BLASInternalError   BLASStatus = 14
	BLASNotSupported    BLASStatus = 15
	BLASLicenseError    BLASStatus = 16
)

var blasText = map[BLASStatus]struct{ name, text string }{
	BLASSuccess:         {"CUBLAS_STATUS_SUCCESS", "no error"},
	BLASNotInitialized:  {"CUBLAS_STATUS_NOT_INITIALIZED", "cublas not initialized (no current context or no handle)"},
	BLASAllocFailed:     {"CUBLAS_STATUS_ALLOC_FAILED", "resource allocation failed"},
	BLASInvalidValue:    {"CUBLAS_STATUS_INVALID_VALUE", "invalid parameter (a negative size, a bad leading dimension)"},
	BLASArchMismatch:    {"CUBLAS_STATUS_ARCH_MISMATCH", "the device lacks a required feature"},
	BLASMappingError:    {"CUBLAS_STATUS_MAPPING_ERROR", "access to gpu memory failed"},
	BLASExecutionFailed: {"CUBLAS_STATUS_EXECUTION_FAILED", "a kernel failed to launch or run"},
	BLASInternalError:   {"CUBLAS_STATUS_INTERNAL_ERROR", "internal cublas error"},
	BLASNotSupported:    {"CUBLAS_STATUS_NOT_SUPPORTED", "combination of types and parameters not supported"},
	BLASLicenseError:    {"CUBLAS_STATUS_LICENSE_ERROR", "license error"},
}

// Name is the C enumerator name ("CUBLAS_STATUS_INVALID_VALUE").
func (s BLASStatus) Name() string {
	if t, ok := blasText[s]; ok {
		return t.name
	}
	return fmt.Sprintf("cublasStatus(%d)", int32(s))
}

// Error reads "CUBLAS_STATUS_INVALID_VALUE (7): invalid parameter …".
func (s BLASStatus) Error() string {
	if t, ok := blasText[s]; ok {
		return fmt.Sprintf("%s (%d): %s", t.name, int32(s), t.text)
	}
	return fmt.Sprintf("unknown cublas status %d", int32(s))
}

// NVRTCResult is an nvrtcResult.
type NVRTCResult int32

// nvrtcResult values from the public nvrtc.h.
const (
	NVRTCSuccess                NVRTCResult = 0
	NVRTCOutOfMemory            NVRTCResult = 1
	NVRTCProgramCreationFailure NVRTCResult = 2
	NVRTCInvalidInput           NVRTCResult = 3
	NVRTCInvalidProgram         NVRTCResult = 4
	NVRTCInvalidOption          NVRTCResult = 5
	NVRTCCompilation            NVRTCResult = 6
	NVRTCBuiltinOperation       NVRTCResult = 7
	NVRTCInternalError          NVRTCResult = 11
)

var nvrtcText = map[NVRTCResult]struct{ name, text string }{
	NVRTCSuccess:                {"NVRTC_SUCCESS", "no error"},
	NVRTCOutOfMemory:            {"NVRTC_ERROR_OUT_OF_MEMORY", "out of host memory"},
	NVRTCProgramCreationFailure: {"NVRTC_ERROR_PROGRAM_CREATION_FAILURE", "program creation failed"},
	NVRTCInvalidInput:           {"NVRTC_ERROR_INVALID_INPUT", "invalid input"},
	NVRTCInvalidProgram:         {"NVRTC_ERROR_INVALID_PROGRAM", "invalid program (or the requested output was not produced)"},
	NVRTCInvalidOption:          {"NVRTC_ERROR_INVALID_OPTION", "invalid compiler option"},
	NVRTCCompilation:            {"NVRTC_ERROR_COMPILATION", "compilation failed"},
	NVRTCBuiltinOperation:       {"NVRTC_ERROR_BUILTIN_OPERATION_FAILURE", "builtin operation failed"},
	NVRTCInternalError:          {"NVRTC_ERROR_INTERNAL_ERROR", "internal nvrtc error"},
}

// Name is the C enumerator name ("NVRTC_ERROR_COMPILATION").
func (r NVRTCResult) Name() string {
	if t, ok := nvrtcText[r]; ok {
		return t.name
	}
	return fmt.Sprintf("nvrtcResult(%d)", int32(r))
}

// Error reads "NVRTC_ERROR_COMPILATION (6): compilation failed".
func (r NVRTCResult) Error() string {
	if t, ok := nvrtcText[r]; ok {
		return fmt.Sprintf("%s (%d): %s", t.name, int32(r), t.text)
	}
	return fmt.Sprintf("unknown nvrtc result %d", int32(r))
}

// callError wraps a failed call's code with the call's name and, when the
// library had text for it, that text and where it came from:
// "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of device memory
// (cuGetErrorString: out of memory)". errors.Is and errors.As see the code.
func callError(prefix, call string, code error, source, text string) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return fmt.Errorf("%s: %s: %w", prefix, call, code)
	}
	return fmt.Errorf("%s: %s: %w (%s: %s)", prefix, call, code, source, text)
}
