//go:build cgo

package cuda

import (
	"testing"
	"unsafe"
)

// What crosses the boundary, as Go and as the C compiler see it. There are
// no structs: handles are pointers carried as uintptr, device pointers are
// CUdeviceptr (unsigned long long on LP64), kernel parameters travel in
// 8-byte slots, and every enum and result is a 4-byte int.
func TestBoundaryLayout(t *testing.T) {
	c := cLayout()
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("partbench's CUDA binding is for LP64 platforms")
	}
	checks := []struct {
		name      string
		goSize, c uintptr
		want      uintptr
	}{
		{"DevicePtr / CUdeviceptr", unsafe.Sizeof(DevicePtr(0)), c.devPtr, 8},
		{"size_t", unsafe.Sizeof(uintptr(0)), c.sizeT, 8},
		{"handle (CUstream, CUcontext, …)", unsafe.Sizeof(uintptr(0)), c.handle, 8},
		{"kernel parameter slot", unsafe.Sizeof(Arg(0)), c.argSlot, 8},
		{"CUresult / enum", unsafe.Sizeof(Result(0)), c.enum, 4},
		{"cublasStatus_t", unsafe.Sizeof(BLASStatus(0)), c.enum, 4},
		{"nvrtcResult", unsafe.Sizeof(NVRTCResult(0)), c.enum, 4},
		{"cudaDataType", unsafe.Sizeof(R16F), c.enum, 4},
		{"CUdevice_attribute", unsafe.Sizeof(AttrL2CacheSize), c.enum, 4},
	}
	for _, k := range checks {
		if k.goSize != k.want || k.c != k.want {
			t.Errorf("%s: Go %d, C %d bytes; want %d", k.name, k.goSize, k.c, k.want)
		}
	}
	if c.maxArgs != MaxArgs {
		t.Errorf("shim packs %d parameters, Go allows %d", c.maxArgs, MaxArgs)
	}
	// Dim3 is converted field by field, never passed whole; its fields are
	// the unsigned ints cuLaunchKernel takes.
	if unsafe.Sizeof(Dim3{}.X) != 4 {
		t.Error("Dim3 fields are not 32-bit")
	}
}
