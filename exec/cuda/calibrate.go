package cuda

import (
	_ "embed" // calibrate.cu
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
)

// calibrateSource is the calibration's read and empty kernels.
//
//go:embed calibrate.cu
var calibrateSource string

// Calibration kernel sizes.
const (
	// CalReadThreads is pb_cal_read's block size; its grid is 4 blocks per SM.
	CalReadThreads = 256
	// CalReadBytesPerCall is how many bytes one timed read call reads at
	// least (its passes over the working set): 256 MiB keep a call's fixed
	// cost (a few µs) under 5 % of it even at the L2's bandwidth.
	CalReadBytesPerCall = 256 << 20
	// calMaxCalls bounds the calls of one sample.
	calMaxCalls = 10000
)

// CalibrateOptions configure a Calibrator; zero values take the defaults.
type CalibrateOptions struct {
	// Device is the GPU's ordinal (0).
	Device int
	// Warmup is the untimed calls before every sample (default 2).
	Warmup int
}

// Calibrator times the device's building blocks for `calibrate --backend
// cuda` on its own stream of the device's primary context: cuBLAS GEMMs
// through the backend's call (cublasGemmEx, row-major, fp32 accumulation,
// cuda.RowMajorGemm), reads of a working set through the L2
// (pb_cal_read), device-to-device copies, and empty kernels launched one
// by one and from a CUDA graph. Every sample is Warmup untimed calls, then
// calls queued back to back between two CUDA events on the stream.
type Calibrator struct {
	drv    *cuda.Driver
	blas   *cuda.BLAS
	ctx    *cuda.Context
	info   cuda.DeviceInfo
	stream cuda.Stream
	handle *cuda.Handle
	module cuda.Module
	loaded bool
	read   cuda.Function
	empty  cuda.Function
	hold   cuda.Function
	ev     [2]cuda.Event
	sink   cuda.DevicePtr
	ws     cuda.DevicePtr
	opts   CalibrateOptions
	image  string
}

// NewCalibrator loads the driver, cuBLAS and NVRTC, compiles the
// calibration kernels for the device and makes the stream, the cuBLAS
// handle (its workspace as the backend's) and the events. Without a
// driver it fails as New does ("cuda: no CUDA driver: " and the places
// searched).
func NewCalibrator(o CalibrateOptions) (c *Calibrator, err error) {
	if o.Warmup <= 0 {
		o.Warmup = 2
	}
	drv, err := loadDriver()
	if err != nil {
		return nil, noDriver(err)
	}
	blas, err := loadCUBLAS()
	if err != nil {
		return nil, fmt.Errorf("cuda: no cuBLAS: %w", err)
	}
	rtc, err := loadNVRTC()
	if err != nil {
		return nil, fmt.Errorf("cuda: no NVRTC: %w", err)
	}
	dev, err := drv.Device(o.Device)
	if err != nil {
		return nil, err
	}
	info, err := dev.Info()
	if err != nil {
		return nil, err
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return nil, err
	}
	c = &Calibrator{drv: drv, blas: blas, ctx: ctx, info: info, opts: o}
	unpin, err := ctx.Pin()
	if err != nil {
		ctx.Release()
		return nil, err
	}
	defer unpin()
	defer func() {
		if err != nil {
			c.release()
			c = nil
		}
	}()
	if c.stream, c.ev, err = newQueue(drv); err != nil {
		return c, err
	}
	if c.handle, err = blas.NewHandle(); err != nil {
		return c, err
	}
	if err := c.handle.SetStream(c.stream); err != nil {
		return c, err
	}
	if err := c.handle.SetMathMode(cuda.DefaultMath); err != nil {
		return c, err
	}
	if c.handle.HasWorkspace() {
		if c.ws, err = drv.MemAlloc(cublasWorkspaceBytes); err != nil {
			return c, err
		}
		if err := c.handle.SetWorkspace(c.ws, cublasWorkspaceBytes); err != nil {
			return c, err
		}
	}
	m, image, lerr := loadStandalone(drv, rtc, info, calibrateSource, "partbench_calibrate.cu")
	if lerr != nil {
		return c, fmt.Errorf("cuda: the calibration kernels: %w", lerr)
	}
	c.module, c.loaded, c.image = m, true, image
	if c.read, err = c.module.Function("pb_cal_read"); err != nil {
		return c, err
	}
	if c.empty, err = c.module.Function("pb_cal_empty"); err != nil {
		return c, err
	}
	if c.hold, err = c.module.Function("pb_cal_hold"); err != nil {
		return c, err
	}
	if c.sink, err = drv.MemAlloc(4 * c.readGrid()); err != nil {
		return c, err
	}
	return c, nil
}

// Info is the calibrated GPU.
func (c *Calibrator) Info() cuda.DeviceInfo { return c.info }

// Driver is the CUDA driver's version ("13.0") and path.
func (c *Calibrator) Driver() (version, path string) { return c.drv.VersionString(), c.drv.Path() }

// Stream is the calibrator's stream: a caller's Sample function queues its
// work there (an NCCL call takes its handle).
func (c *Calibrator) Stream() cuda.Stream { return c.stream }

// Do runs fn pinned to an OS thread with the calibrator's context current.
func (c *Calibrator) Do(fn func() error) error {
	unpin, err := c.ctx.Pin()
	if err != nil {
		return err
	}
	defer unpin()
	return fn()
}

// MemInfo is the device memory free and in all, as the driver reports it.
func (c *Calibrator) MemInfo() (free, total int64, err error) {
	err = c.Do(func() error {
		var err error
		free, total, err = c.drv.MemGetInfo()
		return err
	})
	return free, total, err
}

// Sample queues Warmup untimed calls of fn, then calls calls between two
// events on the stream, and waits: the device seconds per call (between
// the events) and the host seconds per call spent queueing them. fn runs
// pinned with the context current and must queue its work on Stream.
func (c *Calibrator) Sample(calls int, fn func() error) (deviceS, hostS float64, err error) {
	if calls < 1 {
		return 0, 0, fmt.Errorf("cuda: calibration sample of %d calls (must be ≥ 1)", calls)
	}
	err = c.Do(func() error {
		for range c.opts.Warmup {
			if err := fn(); err != nil {
				return err
			}
		}
		if err := c.ev[0].Record(c.stream); err != nil {
			return err
		}
		start := time.Now()
		for range calls {
			if err := fn(); err != nil {
				return err
			}
		}
		hostS = time.Since(start).Seconds() / float64(calls)
		if err := c.ev[1].Record(c.stream); err != nil {
			return err
		}
		if err := c.ev[1].Synchronize(); err != nil {
			return err
		}
		ms, err := cuda.ElapsedMS(c.ev[0], c.ev[1])
		if err != nil {
			return err
		}
		if !(ms > 0) || math.IsInf(float64(ms), 0) {
			return fmt.Errorf("cuda: calibration sample of %d calls timed at %g ms", calls, ms)
		}
		deviceS = float64(ms) / 1e3 / float64(calls)
		return nil
	})
	return deviceS, hostS, err
}

// Timed is repeats samples of fn, each of as many calls as make it last
// about minS of device time (from one probing sample of one call; at
// least 1, at most 10,000): device and host seconds per call, one per
// repeat.
func (c *Calibrator) Timed(minS float64, repeats int, fn func() error) (deviceS, hostS []float64, err error) {
	t1, _, err := c.Sample(1, fn)
	if err != nil {
		return nil, nil, err
	}
	calls := CalibrationCalls(minS, t1)
	for range max(repeats, 1) {
		d, h, err := c.Sample(calls, fn)
		if err != nil {
			return nil, nil, err
		}
		deviceS, hostS = append(deviceS, d), append(hostS, h)
	}
	return deviceS, hostS, nil
}

// CalibrationCalls is the calls of a sample that lasts about minS when
// one call takes oneS: ⌈minS/oneS⌉ in [1, 10,000].
func CalibrationCalls(minS, oneS float64) int {
	if !(oneS > 0) {
		return calMaxCalls
	}
	return int(max(1, min(calMaxCalls, math.Ceil(minS/oneS))))
}

// alloc allocates bytes of device memory and fills them with the 32-bit
// pattern (the fill is queued on the stream).
func (c *Calibrator) alloc(bytes int64, pattern uint32) (cuda.DevicePtr, error) {
	var p cuda.DevicePtr
	err := c.Do(func() error {
		var err error
		if p, err = c.drv.MemAlloc(bytes); err != nil {
			return fmt.Errorf("cuda: calibration buffer of %d B: %w", bytes, err)
		}
		return c.stream.MemsetD32Async(p, pattern, bytes/4)
	})
	return p, err
}

// Alloc is bytes of zeroed device memory for a caller's Sample function
// (an NCCL call's buffer); Free releases it.
func (c *Calibrator) Alloc(bytes int64) (cuda.DevicePtr, error) { return c.alloc((bytes+3)&^3, 0) }

// Free waits for the stream and frees memory from Alloc.
func (c *Calibrator) Free(ps ...cuda.DevicePtr) error { return c.free(ps...) }

func (c *Calibrator) free(ps ...cuda.DevicePtr) error {
	return c.Do(func() error {
		if err := c.stream.Synchronize(); err != nil {
			return err
		}
		var errs []error
		for _, p := range ps {
			if p != 0 {
				errs = append(errs, c.drv.MemFree(p))
			}
		}
		return errors.Join(errs...)
	})
}

// gemmFill is each dtype's fill of the GEMM operands: 0.01 in every
// element (two 16-bit elements per 32-bit word), nonzero so the GEMM
// draws the power of real data, small so a sum over K stays finite in fp16.
var gemmFill = map[string]uint32{
	"fp16": 0x211F211F, // fp16 0.01000
	"bf16": 0x3C243C24, // bf16 0.01001
	"fp32": 0x3C23D70A, // fp32 0.01
}

// GEMM times out[m, n] = x[m, k] @ w[k, n] in dtype through the backend's
// cuBLAS call, repeats samples of about minS each: device seconds per call.
func (c *Calibrator) GEMM(dtype string, m, n, k int, minS float64, repeats int) ([]float64, error) {
	dt, err := lookupDType(dtype)
	if err != nil {
		return nil, err
	}
	if m < 1 || n < 1 || k < 1 {
		return nil, fmt.Errorf("cuda: calibration GEMM %d×%d×%d: every dimension must be ≥ 1", m, n, k)
	}
	eb := int64(dt.bytes)
	// Whole 32-bit words for the fill.
	size := func(r, c int) int64 { return (int64(r)*int64(c)*eb + 3) &^ 3 }
	x, err := c.alloc(size(m, k), gemmFill[dtype])
	if err != nil {
		return nil, err
	}
	w, err := c.alloc(size(k, n), gemmFill[dtype])
	if err != nil {
		return nil, errors.Join(err, c.free(x))
	}
	out, err := c.alloc(size(m, n), 0)
	if err != nil {
		return nil, errors.Join(err, c.free(x, w))
	}
	g := cuda.RowMajorGemm(m, n, k, x, w, out, dt.blas)
	ts, _, err := c.Timed(minS, repeats, func() error { return c.handle.GemmEx(g) })
	return ts, errors.Join(err, c.free(x, w, out))
}

// readGrid is pb_cal_read's grid: 4 blocks per SM.
func (c *Calibrator) readGrid() int64 { return int64(4 * max(c.info.SMs, 1)) }

// CalReadPasses is how many passes one read call makes over a working
// set of bytes: enough to read CalReadBytesPerCall, at least one.
func CalReadPasses(bytes int64) int {
	return int(max(1, min(1<<20, (CalReadBytesPerCall+bytes-1)/max(bytes, 1))))
}

// Read times reads of a working set of bytes (rounded up to whole 128-byte
// lines) read back to back through the L2, each call CalReadPasses(bytes)
// passes over it: bytes per second, one per repeat. A working set far
// beyond the L2 is read from HBM on every pass.
func (c *Calibrator) Read(bytes int64, minS float64, repeats int) ([]float64, error) {
	ws := l2ProbeBytes(bytes)
	buf, err := c.alloc(ws, 0)
	if err != nil {
		return nil, err
	}
	passes := CalReadPasses(ws)
	ts, _, err := c.Timed(minS, repeats, func() error {
		return c.read.Launch(cuda.D1(int(c.readGrid())), cuda.D1(CalReadThreads), 0, c.stream,
			cuda.Ptr(buf), cuda.I64(ws/16), cuda.I32(int32(passes)), cuda.Ptr(c.sink))
	})
	if err = errors.Join(err, c.free(buf)); err != nil {
		return nil, err
	}
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = float64(ws) * float64(passes) / t
	}
	return out, nil
}

// Copy times device-to-device copies of bytes (cuMemcpyDtoDAsync): bytes
// moved per second, counting the read and the write (2 × bytes per copy),
// one per repeat.
func (c *Calibrator) Copy(bytes int64, minS float64, repeats int) ([]float64, error) {
	bytes = l2ProbeBytes(bytes)
	src, err := c.alloc(bytes, 0)
	if err != nil {
		return nil, err
	}
	dst, err := c.alloc(bytes, 0)
	if err != nil {
		return nil, errors.Join(err, c.free(src))
	}
	ts, _, err := c.Timed(minS, repeats, func() error { return c.stream.CopyDtoDAsync(dst, src, bytes) })
	if err = errors.Join(err, c.free(src, dst)); err != nil {
		return nil, err
	}
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = 2 * float64(bytes) / t
	}
	return out, nil
}

// launchEmpty queues one empty kernel of one warp.
func (c *Calibrator) launchEmpty() error {
	return c.empty.Launch(cuda.D1(1), cuda.D1(32), 0, c.stream, cuda.I32(0))
}

// Launch times empty kernels launched one by one, calls per sample:
// device seconds per kernel (back to back on the stream) and host seconds
// per launch (the enqueue), one per repeat.
func (c *Calibrator) Launch(calls, repeats int) (deviceS, hostS []float64, err error) {
	for range max(repeats, 1) {
		d, h, err := c.Sample(calls, c.launchEmpty)
		if err != nil {
			return nil, nil, err
		}
		deviceS, hostS = append(deviceS, d), append(hostS, h)
	}
	return deviceS, hostS, nil
}

// GraphLaunch captures kernels empty kernels into a CUDA graph and times
// launches of it, calls per sample: the device seconds per kernel inside
// the graph and the host seconds per graph launch, one per repeat.
func (c *Calibrator) GraphLaunch(kernels, calls, repeats int) (kernelS, launchS []float64, err error) {
	if !c.drv.HasGraphs() {
		return nil, nil, errors.New("cuda: the driver has no CUDA graph calls")
	}
	if kernels < 1 {
		return nil, nil, fmt.Errorf("cuda: a graph of %d kernels (must be ≥ 1)", kernels)
	}
	var exec cuda.GraphExec
	var graph cuda.Graph
	err = c.Do(func() error {
		if err := c.stream.BeginCapture(cuda.CaptureThreadLocal); err != nil {
			return err
		}
		var lerr error
		for range kernels {
			if lerr = c.launchEmpty(); lerr != nil {
				break
			}
		}
		g, err := c.stream.EndCapture()
		if err = errors.Join(lerr, err); err != nil {
			return err
		}
		graph = g
		exec, err = graph.Instantiate()
		if err != nil {
			return errors.Join(err, graph.Destroy())
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		err = errors.Join(err, c.Do(func() error {
			return errors.Join(c.stream.Synchronize(), exec.Destroy(), graph.Destroy())
		}))
	}()
	for range max(repeats, 1) {
		d, h, err := c.Sample(calls, func() error { return exec.Launch(c.stream) })
		if err != nil {
			return nil, nil, err
		}
		kernelS, launchS = append(kernelS, d/float64(kernels)), append(launchS, h)
	}
	return kernelS, launchS, nil
}

// Hold queues on stream (of the device's primary context: another
// Compute's on the same GPU) a kernel that keeps it busy for d of device
// time, and returns at once: what is queued behind it meanwhile then runs
// back to back, with no wait for the host between launches.
func (c *Calibrator) Hold(stream cuda.Stream, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return c.Do(func() error {
		return c.hold.Launch(cuda.D1(1), cuda.D1(1), 0, stream, cuda.U64(uint64(d.Nanoseconds())))
	})
}

// Describe names the device, the driver and how the kernels were built.
func (c *Calibrator) Describe() string {
	i := c.info
	return fmt.Sprintf("%s (sm_%d%d, GPU %d, %d SMs, CUDA driver %s), kernels %s",
		i.Name, i.ComputeMajor, i.ComputeMinor, i.Ordinal, i.SMs, c.drv.VersionString(), c.image)
}

// Close frees the calibrator's memory, module, handle, events and stream
// and releases the context (the libraries stay loaded).
func (c *Calibrator) Close() error {
	if c.ctx == nil {
		return nil
	}
	unpin, err := c.ctx.Pin()
	if err != nil {
		return err
	}
	defer unpin()
	return c.release()
}

func (c *Calibrator) release() error {
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.stream != (cuda.Stream{}) {
		keep(c.stream.Synchronize())
	}
	for _, p := range []*cuda.DevicePtr{&c.sink, &c.ws} {
		if *p != 0 {
			keep(c.drv.MemFree(*p))
			*p = 0
		}
	}
	if c.loaded {
		keep(c.module.Unload())
		c.loaded = false
	}
	if c.handle != nil {
		keep(c.handle.Destroy())
		c.handle = nil
	}
	releaseQueue(keep, &c.stream, c.ev[:], &c.ctx)
	if len(errs) > 0 {
		return fmt.Errorf("cuda: calibrator close: %w", errors.Join(errs...))
	}
	return nil
}
