package cuda

import (
	"fmt"
	"math"
)

// DevicePtr is a CUdeviceptr: a device address (an unsigned 64-bit integer
// on LP64 platforms, per cuda.h).
type DevicePtr uintptr

// Add offsets p by bytes.
func (p DevicePtr) Add(bytes int64) DevicePtr { return DevicePtr(int64(p) + bytes) }

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// D1 is a one-dimensional shape (y = z = 1).
func D1(x int) Dim3 { return Dim3{uint32(x), 1, 1} }

// D2 is a two-dimensional shape (z = 1).
func D2(x, y int) Dim3 { return Dim3{uint32(x), uint32(y), 1} }

func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

// Arg is one kernel parameter in an 8-byte little-endian slot, as
// (*Driver).Launch packs it for cuLaunchKernel. Build it with the helper of
// the parameter's C type: a kernel `f(const float* x, int n, float a)` takes
// Ptr(x), I32(n), F32(a). The size of each parameter is read by the driver
// from the kernel image, so the helper must match the C type exactly.
type Arg uint64

// Ptr is a pointer parameter (any T*).
func Ptr(p DevicePtr) Arg { return Arg(p) }

// I32 is an int parameter.
func I32(v int32) Arg { return Arg(uint32(v)) }

// U32 is an unsigned int parameter.
func U32(v uint32) Arg { return Arg(v) }

// I64 is a long long parameter.
func I64(v int64) Arg { return Arg(uint64(v)) }

// U64 is an unsigned long long parameter.
func U64(v uint64) Arg { return Arg(v) }

// F32 is a float parameter.
func F32(v float32) Arg { return Arg(math.Float32bits(v)) }

// F64 is a double parameter.
func F64(v float64) Arg { return Arg(math.Float64bits(v)) }

// MaxArgs is the most parameters Launch packs.
const MaxArgs = 32

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

// CUdevice_attribute values from the public cuda.h (fixed numbers).
const (
	AttrMaxThreadsPerBlock         DeviceAttribute = 1
	AttrWarpSize                   DeviceAttribute = 10
	AttrMultiprocessorCount        DeviceAttribute = 16
	AttrPCIBusID                   DeviceAttribute = 33
	AttrGlobalMemoryBusWidth       DeviceAttribute = 37 // bits
	AttrL2CacheSize                DeviceAttribute = 38 // bytes
	AttrComputeCapabilityMajor     DeviceAttribute = 75
	AttrComputeCapabilityMinor     DeviceAttribute = 76
	AttrMaxSharedMemoryPerSM       DeviceAttribute = 81 // bytes
	AttrMaxSharedMemoryPerBlockOpt DeviceAttribute = 97 // bytes, opt-in
	AttrMaxPersistingL2CacheSize   DeviceAttribute = 108
	AttrMaxAccessPolicyWindowSize  DeviceAttribute = 109 // bytes (CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE)
)

// StreamFlags are cuStreamCreate flags (CUstream_flags).
type StreamFlags uint32

const (
	StreamDefault     StreamFlags = 0x0
	StreamNonBlocking StreamFlags = 0x1 // does not synchronize with the legacy NULL stream
)

// EventFlags are cuEventCreate flags (CUevent_flags).
type EventFlags uint32

const (
	EventDefault       EventFlags = 0x0
	EventBlockingSync  EventFlags = 0x1
	EventDisableTiming EventFlags = 0x2
)

// CaptureMode is a CUstreamCaptureMode.
type CaptureMode int32

const (
	CaptureGlobal      CaptureMode = 0
	CaptureThreadLocal CaptureMode = 1
	CaptureRelaxed     CaptureMode = 2
)
