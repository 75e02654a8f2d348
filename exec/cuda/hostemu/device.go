package hostemu

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/exec/cuda/kernels"
)

// Device runs the same launches as a Program on a GPU: the same source
// compiled by NVRTC for device 0, the same buffers copied in and out. The
// RealGPU tests run a harness test's launches on it, so one expectation
// holds the kernel on the device and the emulation alike.
type Device struct {
	drv     *cuda.Driver
	ctx     *cuda.Context
	module  cuda.Module
	fns     map[string]cuda.Function
	kernels map[string]Kernel
	// What is the image: "cubin sm_90" or "ptx compute_90".
	What string
}

// NewDevice compiles o.Source (its pb_*.cuh includes expanded) with NVRTC
// for device 0 and loads o.Kernels; the error wraps the loader's when there
// is no driver, device or NVRTC, with ErrUnavailable (a test skips on it).
// o.ASan is ignored.
func NewDevice(o Options) (*Device, error) {
	drv, err := cuda.Load()
	if err != nil {
		return nil, fmt.Errorf("hostemu: no CUDA driver: %w", errors.Join(err, ErrUnavailable))
	}
	fail := func(err error) (*Device, error) {
		drv.Close()
		return nil, err
	}
	if n, err := drv.DeviceCount(); err != nil || n == 0 {
		return fail(fmt.Errorf("hostemu: no CUDA device (%d devices): %w", n, errors.Join(err, ErrUnavailable)))
	}
	dev, err := drv.Device(0)
	if err != nil {
		return fail(err)
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return fail(err)
	}
	rtc, err := cuda.LoadNVRTC()
	if err != nil {
		return fail(fmt.Errorf("hostemu: no NVRTC: %w", errors.Join(err, ErrUnavailable)))
	}
	defer rtc.Close()
	src, err := kernels.Expand(o.Name, o.Source)
	if err != nil {
		return fail(err)
	}
	cubin := rtc.HasCUBIN()
	out, err := rtc.Compile(src, o.Name, append([]string{cuda.ArchOption(major, minor, cubin)}, o.Defines...)...)
	if err != nil {
		return fail(err)
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return fail(err)
	}
	d := &Device{drv: drv, ctx: ctx, fns: map[string]cuda.Function{}, kernels: map[string]Kernel{}, What: fmt.Sprintf("ptx compute_%d%d", major, minor)}
	if out.CUBIN {
		d.What = fmt.Sprintf("cubin sm_%d%d", major, minor)
	}
	unpin, err := ctx.Pin()
	if err != nil {
		ctx.Release()
		return fail(err)
	}
	defer unpin()
	if d.module, err = drv.LoadModule(out.Image); err != nil {
		ctx.Release()
		return fail(err)
	}
	for _, k := range o.Kernels {
		f, err := d.module.Function(k.Name)
		if err != nil {
			d.module.Unload()
			ctx.Release()
			return fail(err)
		}
		d.fns[k.Name], d.kernels[k.Name] = f, k
	}
	return d, nil
}

// ErrUnavailable is wrapped when there is no CUDA driver, no device or no
// NVRTC.
var ErrUnavailable = errors.New("no GPU to run on")

// Close unloads the module and releases the context and the driver.
func (d *Device) Close() error {
	if unpin, err := d.ctx.Pin(); err == nil {
		d.module.Unload()
		unpin()
	}
	return errors.Join(d.ctx.Release(), d.drv.Close())
}

// Run copies bufs to device memory, runs the launches in order on one
// stream and returns the buffers as the kernels left them. Dynamic shared
// memory beyond 48 KiB needs the function attribute the binding does not
// set here, and is refused.
func (d *Device) Run(ctx context.Context, bufs [][]byte, launches []Launch) ([][]byte, error) {
	for _, l := range launches {
		if err := checkLaunch(d.kernels, bufs, l); err != nil {
			return nil, err
		}
		if l.DynSmem > 48<<10 {
			return nil, fmt.Errorf("hostemu: %s with %d bytes of dynamic shared memory: the device runner launches at most 48 KiB", l.Kernel, l.DynSmem)
		}
	}
	unpin, err := d.ctx.Pin()
	if err != nil {
		return nil, err
	}
	defer unpin()
	s, err := d.drv.NewStream(cuda.StreamNonBlocking)
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	ptrs := make([]cuda.DevicePtr, len(bufs))
	defer func() {
		for _, p := range ptrs {
			if p != 0 {
				d.drv.MemFree(p)
			}
		}
	}()
	for i, b := range bufs {
		if ptrs[i], err = d.drv.MemAlloc(int64(max(len(b), 1))); err != nil {
			return nil, err
		}
		if len(b) > 0 {
			if err := d.drv.CopyHtoD(ptrs[i], b); err != nil {
				return nil, err
			}
		}
	}
	for _, l := range launches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		args := make([]cuda.Arg, len(l.Args))
		for i, a := range l.Args {
			switch a.kind {
			case 'p':
				args[i] = cuda.Ptr(ptrs[a.buf].Add(int64(a.off)))
			case 'f':
				args[i] = cuda.F32(math.Float32frombits(uint32(a.val)))
			default:
				args[i] = cuda.Arg(a.val)
			}
		}
		dim := func(x Dim) cuda.Dim3 { return cuda.Dim3{X: uint32(x.X), Y: uint32(x.Y), Z: uint32(x.Z)} }
		if err := d.fns[l.Kernel].Launch(dim(l.Grid), dim(l.Block), l.DynSmem, s, args...); err != nil {
			return nil, err
		}
	}
	if err := s.Synchronize(); err != nil {
		return nil, err
	}
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		out[i] = make([]byte, len(b))
		if len(b) > 0 {
			if err := d.drv.CopyDtoH(out[i], ptrs[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
