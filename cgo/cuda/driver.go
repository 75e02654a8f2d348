package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/partbench/partbench/cgo/dl"
)

// ErrNoGraphs is returned by the graph calls when the driver lacks them
// (cuGraphInstantiateWithFlags needs a CUDA 11.4 driver).
var ErrNoGraphs = errors.New("cuda: the driver has no graph capture (cuStreamBeginCapture_v2, cuGraphInstantiateWithFlags)")

// Driver is the loaded CUDA driver library (libcuda.so.1), initialized.
//
// A CUDA context is current per OS thread, and a goroutine may move between
// threads at any call. Code that uses the driver therefore pins its
// goroutine (runtime.LockOSThread) and makes its context current
// ((*Context).SetCurrent) before a run of calls, and keeps it pinned until
// the run ends; see (*Context).Pin. Calls that take no context (the error
// texts, the device queries, primary context retain/release) work from any
// thread. The Driver itself is safe for concurrent use.
type Driver struct {
	dl      *dl.Library
	c       drvAPI
	version int
	closed  sync.Once
}

// Load finds libcuda.so.1 (dl.CUDA: $PARTBENCH_CUDA_LIB, LD_LIBRARY_PATH,
// $CUDA_HOME, the system loader), binds it and calls cuInit(0).
func Load() (*Driver, error) {
	lib, err := dl.Find(dl.CUDA())
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	d, err := LoadFrom(lib)
	if err != nil {
		lib.Close()
		return nil, err
	}
	return d, nil
}

// LoadFrom binds an already opened library (the seam tests use to load a
// fake), calls cuInit(0) and asks the driver version. It fails naming every
// mandatory symbol the library lacks. On success the Driver owns lib:
// Close closes it.
func LoadFrom(lib *dl.Library) (*Driver, error) {
	c, err := bindDriver(lib)
	if err != nil {
		return nil, err
	}
	d := &Driver{dl: lib, c: c}
	if r := c.init(0); r != Success {
		err := d.fail("cuInit", r)
		c.free()
		return nil, err
	}
	v, r := c.driverGetVersion()
	if r != Success {
		err := d.fail("cuDriverGetVersion", r)
		c.free()
		return nil, err
	}
	d.version = v
	return d, nil
}

// Path is the file the library was loaded from.
func (d *Driver) Path() string { return d.dl.File() }

// Version is the CUDA version the driver supports, as cuDriverGetVersion
// returns it (1000·major + 10·minor: 13000 is 13.0).
func (d *Driver) Version() int { return d.version }

// VersionString is Version as "13.0".
func (d *Driver) VersionString() string {
	return fmt.Sprintf("%d.%d", d.version/1000, d.version%1000/10)
}

// HasGraphs reports whether the driver has the stream-capture and graph
// calls partbench uses.
func (d *Driver) HasGraphs() bool { return d.c.hasGraphs() }

// ErrorName is the driver's own name for r (cuGetErrorName), "" when it
// has none.
func (d *Driver) ErrorName(r Result) string {
	s, _ := d.c.errorName(r)
	return s
}

// ErrorString is the driver's own description of r (cuGetErrorString),
// "" when it has none.
func (d *Driver) ErrorString(r Result) string {
	s, _ := d.c.errorString(r)
	return s
}

// Close releases the symbol table and closes the library. Every context,
// allocation, stream, event, module and graph must be released first.
// Closing twice does nothing.
func (d *Driver) Close() error {
	var err error
	d.closed.Do(func() {
		d.c.free()
		err = d.dl.Close()
	})
	return err
}

// fail is a failed call's error, with cuGetErrorString's text appended.
func (d *Driver) fail(call string, r Result) error {
	s, _ := d.c.errorString(r)
	return callError("cuda", call, r, "cuGetErrorString", s)
}

// DeviceCount is the number of visible devices (cuDeviceGetCount).
func (d *Driver) DeviceCount() (int, error) {
	n, r := d.c.deviceGetCount()
	if r != Success {
		return 0, d.fail("cuDeviceGetCount", r)
	}
	return n, nil
}

// Device is a visible GPU.
type Device struct {
	d       *Driver
	h       int32
	Ordinal int
}

// Device returns the device with the given ordinal (cuDeviceGet).
func (d *Driver) Device(ordinal int) (Device, error) {
	n, err := d.DeviceCount()
	if err != nil {
		return Device{}, err
	}
	if ordinal < 0 || ordinal >= n {
		return Device{}, fmt.Errorf("cuda: device %d does not exist (%d visible)", ordinal, n)
	}
	h, r := d.c.deviceGet(ordinal)
	if r != Success {
		return Device{}, d.fail("cuDeviceGet", r)
	}
	return Device{d: d, h: h, Ordinal: ordinal}, nil
}

// Name is the device's product name (cuDeviceGetName).
func (dev Device) Name() (string, error) {
	s, r := dev.d.c.deviceGetName(dev.h)
	if r != Success {
		return "", dev.d.fail("cuDeviceGetName", r)
	}
	return s, nil
}

// Attribute reads one device attribute (cuDeviceGetAttribute).
func (dev Device) Attribute(a DeviceAttribute) (int, error) {
	v, r := dev.d.c.deviceGetAttribute(a, dev.h)
	if r != Success {
		return 0, dev.d.fail(fmt.Sprintf("cuDeviceGetAttribute(%d)", int32(a)), r)
	}
	return v, nil
}

// TotalMem is the device memory in bytes (cuDeviceTotalMem_v2).
func (dev Device) TotalMem() (int64, error) {
	n, r := dev.d.c.deviceTotalMem(dev.h)
	if r != Success {
		return 0, dev.d.fail("cuDeviceTotalMem_v2", r)
	}
	return n, nil
}

// ComputeCapability is the device's (major, minor) version: (9, 0) on H100
// and H200.
func (dev Device) ComputeCapability() (major, minor int, err error) {
	if major, err = dev.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = dev.Attribute(AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// DeviceInfo is what partbench reports about a GPU.
type DeviceInfo struct {
	Ordinal              int    `json:"ordinal"`
	Name                 string `json:"name"`
	ComputeMajor         int    `json:"compute_major"`
	ComputeMinor         int    `json:"compute_minor"`
	SMs                  int    `json:"sms"`
	TotalMemBytes        int64  `json:"total_mem_bytes"`
	L2Bytes              int64  `json:"l2_bytes"`
	MaxPersistingL2Bytes int64  `json:"max_persisting_l2_bytes"`
	SharedPerBlockOptin  int64  `json:"shared_per_block_optin_bytes"`
	SharedPerSMBytes     int64  `json:"shared_per_sm_bytes"`
	MemoryBusWidthBits   int    `json:"memory_bus_width_bits"`
	DriverVersion        int    `json:"driver_version"`
	MaxThreadsPerBlock   int    `json:"max_threads_per_block"`
	WarpSize             int    `json:"warp_size"`
	PCIBusID             int    `json:"pci_bus_id"`
}

// Info reads the device's name, compute capability, SM count, memory and
// cache sizes.
func (dev Device) Info() (DeviceInfo, error) {
	info := DeviceInfo{Ordinal: dev.Ordinal, DriverVersion: dev.d.version}
	var err error
	if info.Name, err = dev.Name(); err != nil {
		return info, err
	}
	if info.TotalMemBytes, err = dev.TotalMem(); err != nil {
		return info, err
	}
	ints := []struct {
		a   DeviceAttribute
		dst *int
	}{
		{AttrComputeCapabilityMajor, &info.ComputeMajor}, {AttrComputeCapabilityMinor, &info.ComputeMinor},
		{AttrMultiprocessorCount, &info.SMs}, {AttrGlobalMemoryBusWidth, &info.MemoryBusWidthBits},
		{AttrMaxThreadsPerBlock, &info.MaxThreadsPerBlock}, {AttrWarpSize, &info.WarpSize},
		{AttrPCIBusID, &info.PCIBusID},
	}
	for _, f := range ints {
		if *f.dst, err = dev.Attribute(f.a); err != nil {
			return info, err
		}
	}
	bytes := []struct {
		a   DeviceAttribute
		dst *int64
	}{
		{AttrL2CacheSize, &info.L2Bytes}, {AttrMaxSharedMemoryPerBlockOpt, &info.SharedPerBlockOptin},
		{AttrMaxSharedMemoryPerSM, &info.SharedPerSMBytes},
	}
	for _, f := range bytes {
		v, err := dev.Attribute(f.a)
		if err != nil {
			return info, err
		}
		*f.dst = int64(v)
	}
	// Persisting L2 is absent before Ampere: 0 there.
	if v, err := dev.Attribute(AttrMaxPersistingL2CacheSize); err == nil {
		info.MaxPersistingL2Bytes = int64(v)
	}
	return info, nil
}

// Context is a device's primary context, retained by this process.
type Context struct {
	d   *Driver
	dev Device
	h   uintptr

	mu       sync.Mutex
	released bool
}

// PrimaryContext retains the device's primary context
// (cuDevicePrimaryCtxRetain): the one context per device per process that
// the CUDA runtime, cuBLAS and NCCL also use, so their work and partbench's
// share allocations and streams. Release it when done.
func (dev Device) PrimaryContext() (*Context, error) {
	h, r := dev.d.c.primaryCtxRetain(dev.h)
	if r != Success {
		return nil, dev.d.fail("cuDevicePrimaryCtxRetain", r)
	}
	return &Context{d: dev.d, dev: dev, h: h}, nil
}

// Driver is the driver the context belongs to.
func (c *Context) Driver() *Driver { return c.d }

// Device is the context's device.
func (c *Context) Device() Device { return c.dev }

// Handle is the CUcontext.
func (c *Context) Handle() uintptr { return c.h }

// SetCurrent makes the context current on the calling OS thread
// (cuCtxSetCurrent). It holds only while the goroutine stays on this
// thread: pin it first (runtime.LockOSThread), or use Pin.
func (c *Context) SetCurrent() error {
	if r := c.d.c.ctxSetCurrent(c.h); r != Success {
		return c.d.fail("cuCtxSetCurrent", r)
	}
	return nil
}

// Pin locks the calling goroutine to its OS thread and makes the context
// current there; the returned function unlocks the goroutine. Every run
// of context-bound calls goes between the two:
//
//	unpin, err := ctx.Pin()
//	if err != nil { return err }
//	defer unpin()
func (c *Context) Pin() (unpin func(), err error) {
	runtime.LockOSThread()
	if err := c.SetCurrent(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

// Current reports whether this context is current on the calling thread.
func (c *Context) Current() (bool, error) {
	h, r := c.d.c.ctxGetCurrent()
	if r != Success {
		return false, c.d.fail("cuCtxGetCurrent", r)
	}
	return h == c.h, nil
}

// Synchronize waits for all work in the current context (cuCtxSynchronize).
func (d *Driver) Synchronize() error {
	if r := d.c.ctxSynchronize(); r != Success {
		return d.fail("cuCtxSynchronize", r)
	}
	return nil
}

// Release releases the primary context (cuDevicePrimaryCtxRelease_v2);
// the driver destroys it when its last retainer releases it. Releasing
// twice does nothing.
func (c *Context) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return nil
	}
	c.released = true
	if r := c.d.c.primaryCtxRelease(c.dev.h); r != Success {
		return c.d.fail("cuDevicePrimaryCtxRelease_v2", r)
	}
	return nil
}

// MemGetInfo is the free and total memory of the current context's device
// (cuMemGetInfo_v2).
func (d *Driver) MemGetInfo() (free, total int64, err error) {
	free, total, r := d.c.memGetInfo()
	if r != Success {
		return 0, 0, d.fail("cuMemGetInfo_v2", r)
	}
	return free, total, nil
}

// MemAlloc allocates bytes of device memory in the current context
// (cuMemAlloc_v2; 256-byte aligned).
func (d *Driver) MemAlloc(bytes int64) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: cannot allocate %d bytes", bytes)
	}
	p, r := d.c.memAlloc(bytes)
	if r != Success {
		return 0, d.fail(fmt.Sprintf("cuMemAlloc_v2(%d bytes)", bytes), r)
	}
	return p, nil
}

// MemFree frees an allocation (cuMemFree_v2).
func (d *Driver) MemFree(p DevicePtr) error {
	if r := d.c.memFree(p); r != Success {
		return d.fail("cuMemFree_v2", r)
	}
	return nil
}

// Bytes views a slice of fixed-size elements as its bytes, for the copies.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

func hostPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// CopyHtoD copies src to device memory at dst and returns when done
// (cuMemcpyHtoD_v2, on the legacy default stream).
func (d *Driver) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if r := d.c.memcpyHtoD(dst, hostPtr(src), int64(len(src))); r != Success {
		return d.fail("cuMemcpyHtoD_v2", r)
	}
	return nil
}

// CopyDtoH copies len(dst) bytes from device memory at src and returns
// when done (cuMemcpyDtoH_v2).
func (d *Driver) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	if r := d.c.memcpyDtoH(hostPtr(dst), src, int64(len(dst))); r != Success {
		return d.fail("cuMemcpyDtoH_v2", r)
	}
	return nil
}

// MemsetD8 sets n bytes at dst to v (cuMemsetD8_v2).
func (d *Driver) MemsetD8(dst DevicePtr, v byte, n int64) error {
	if r := d.c.memsetD8(dst, v, n); r != Success {
		return d.fail("cuMemsetD8_v2", r)
	}
	return nil
}
