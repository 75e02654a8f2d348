package cuda

import (
	"errors"
	"testing"
)

// Error texts come from partbench's own tables, so they read the same
// with no library loaded.
func TestResultTextsWithoutLibrary(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{ErrOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY (2): out of device memory"},
		{ErrInvalidContext, "CUDA_ERROR_INVALID_CONTEXT (201): no valid context is current on this thread"},
		{ErrStubLibrary, "CUDA_ERROR_STUB_LIBRARY (34): the toolkit's link stub was loaded instead of the driver's libcuda"},
		{ErrUnsupportedPTXVersion, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): ptx is newer than this driver supports"},
		{Result(12345), "unknown cuda result 12345"},
		{BLASInvalidValue, "CUBLAS_STATUS_INVALID_VALUE (7): invalid parameter (a negative size, a bad leading dimension)"},
		{BLASStatus(99), "unknown cublas status 99"},
		{NVRTCCompilation, "NVRTC_ERROR_COMPILATION (6): compilation failed"},
		{NVRTCResult(42), "unknown nvrtc result 42"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	if ErrIllegalAddress.Name() != "CUDA_ERROR_ILLEGAL_ADDRESS" || Result(3000).Name() != "CUresult(3000)" {
		t.Errorf("names: %q %q", ErrIllegalAddress.Name(), Result(3000).Name())
	}
}

// Spot-check the table against the fixed numbers of cuda.h, cublas_api.h
// and nvrtc.h: a wrong number would mislabel every error of that kind.
func TestResultNumbersFromHeaders(t *testing.T) {
	for r, n := range map[Result]int32{
		Success: 0, ErrInvalidValue: 1, ErrOutOfMemory: 2, ErrNotInitialized: 3, ErrNoDevice: 100,
		ErrInvalidDevice: 101, ErrInvalidImage: 200, ErrInvalidContext: 201, ErrNoBinaryForGPU: 209,
		ErrInvalidPTX: 218, ErrUnsupportedPTXVersion: 222, ErrInvalidHandle: 400, ErrNotFound: 500,
		ErrNotReady: 600, ErrIllegalAddress: 700, ErrLaunchOutOfResources: 701, ErrLaunchFailed: 719,
		ErrNotSupported: 801, ErrStreamCaptureUnsupp: 900, ErrStreamCaptureInvalid: 901,
		ErrStreamCaptureWrongThr: 908, ErrUnknown: 999,
	} {
		if int32(r) != n {
			t.Errorf("%s = %d, header says %d", r.Name(), int32(r), n)
		}
	}
	if BLASNotSupported != 15 || BLASExecutionFailed != 13 || NVRTCInvalidOption != 5 {
		t.Error("cublas/nvrtc codes differ from the headers")
	}
}

func TestCallErrorWraps(t *testing.T) {
	err := callError("cuda", "cuMemAlloc_v2", ErrOutOfMemory, "cuGetErrorString", " out of memory\n")
	if want := "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of device memory (cuGetErrorString: out of memory)"; err.Error() != want {
		t.Errorf("got %q\nwant %q", err, want)
	}
	if !errors.Is(err, ErrOutOfMemory) {
		t.Error("errors.Is does not see the Result")
	}
	err = callError("cublas", "cublasGemmEx", BLASInvalidValue, "cublasGetStatusString", "")
	var s BLASStatus
	if !errors.As(err, &s) || s != BLASInvalidValue || err.Error() != "cublas: cublasGemmEx: "+BLASInvalidValue.Error() {
		t.Errorf("err = %v", err)
	}
}
