package cuda

import (
	_ "embed" // l2probe.cu
	"fmt"
	"slices"

	"github.com/partbench/partbench/cgo/cuda"
)

// l2ProbeSource is the probe's read kernel.
//
//go:embed l2probe.cu
var l2ProbeSource string

// L2 probe sizes.
const (
	// L2ProbeThreads is the read kernel's block size.
	L2ProbeThreads = 256
	// l2ProbeAlign is the working set's granularity: whole float4s of whole
	// 128-byte lines.
	l2ProbeAlign = 128
)

// L2ProbeOptions configure an L2Probe; zero values take the defaults.
type L2ProbeOptions struct {
	// Device is the GPU's ordinal (0).
	Device int
	// ColdBytes is how many other bytes the streaming reference cycles
	// through besides the working set (default: 4 × the device's L2), so no
	// region is in the L2 when it is read again.
	ColdBytes int64
	// Reads is how many times one sample reads the working set back to
	// back (default 20); Repeats how many samples give the median (5).
	Reads, Repeats int
}

// L2Reuse is one working set's measured reuse on the GPU: the bandwidth of
// reading it back to back, with and without a persisting-L2 access-policy
// window over it, against reading as many bytes that the L2 does not hold
// (a streaming read). Medians over the repeats, bytes per second.
type L2Reuse struct {
	Bytes             int64   `json:"bytes"`
	ReuseBytesPerS    float64 `json:"reuse_bytes_per_s"`
	WindowBytesPerS   float64 `json:"window_bytes_per_s"`
	StreamBytesPerS   float64 `json:"stream_bytes_per_s"`
	WindowBytes       int64   `json:"window_bytes"`        // the window's extent (≤ the device's max window)
	PersistingL2Bytes int64   `json:"persisting_l2_bytes"` // the set-aside the window used
	HitRatio          float32 `json:"hit_ratio"`           // the window's hit ratio
}

// L2Probe reads working sets on one GPU (its primary context, its own
// stream and module) for `l2 --measure --backend cuda`.
type L2Probe struct {
	drv    *cuda.Driver
	ctx    *cuda.Context
	info   cuda.DeviceInfo
	stream cuda.Stream
	module cuda.Module
	fn     cuda.Function
	ev     [2]cuda.Event
	opts   L2ProbeOptions
	maxWin int64
	sink   cuda.DevicePtr
	image  string
}

// NewL2Probe loads the driver and NVRTC, compiles the read kernel for the
// device and makes the probe's stream and events. It fails when the driver
// lacks the persisting-L2 controls (cuda.ErrNoL2Policy).
func NewL2Probe(o L2ProbeOptions) (p *L2Probe, err error) {
	if o.Reads <= 0 {
		o.Reads = 20
	}
	if o.Repeats <= 0 {
		o.Repeats = 5
	}
	drv, err := loadDriver()
	if err != nil {
		return nil, err
	}
	if !drv.HasL2Policy() {
		return nil, cuda.ErrNoL2Policy
	}
	rtc, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	dev, err := drv.Device(o.Device)
	if err != nil {
		return nil, err
	}
	info, err := dev.Info()
	if err != nil {
		return nil, err
	}
	maxWin, err := dev.Attribute(cuda.AttrMaxAccessPolicyWindowSize)
	if err != nil {
		return nil, err
	}
	if o.ColdBytes <= 0 {
		o.ColdBytes = 4 * info.L2Bytes
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return nil, err
	}
	p = &L2Probe{drv: drv, ctx: ctx, info: info, opts: o, maxWin: int64(maxWin)}
	unpin, err := ctx.Pin()
	if err != nil {
		ctx.Release()
		return nil, err
	}
	defer unpin()
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	if p.stream, p.ev, err = newQueue(drv); err != nil {
		return p, err
	}
	m, image, lerr := loadStandalone(drv, rtc, info, l2ProbeSource, "partbench_l2probe.cu")
	if lerr != nil {
		return p, fmt.Errorf("cuda: the L2 probe's kernel: %w", lerr)
	}
	p.module, p.image = m, image
	if p.fn, err = p.module.Function("pb_l2_read"); err != nil {
		return p, err
	}
	if p.sink, err = drv.MemAlloc(4 * l2ProbeGrid(info)); err != nil {
		return p, err
	}
	return p, nil
}

// l2ProbeGrid is the read kernel's grid: 4 blocks per SM.
func l2ProbeGrid(info cuda.DeviceInfo) int64 { return int64(4 * max(info.SMs, 1)) }

// Info is the probed GPU.
func (p *L2Probe) Info() cuda.DeviceInfo { return p.info }

// l2ProbeBytes is the working set read for bytes: at least one 128-byte
// line, a whole number of lines.
func l2ProbeBytes(bytes int64) int64 { return max(bytes, l2ProbeAlign) &^ (l2ProbeAlign - 1) }

// read queues one read of [ptr, ptr+bytes).
func (p *L2Probe) read(ptr cuda.DevicePtr, bytes int64) error {
	return p.fn.Launch(cuda.D1(int(l2ProbeGrid(p.info))), cuda.D1(L2ProbeThreads), 0, p.stream,
		cuda.Ptr(ptr), cuda.I64(bytes/16), cuda.Ptr(p.sink))
}

// timed runs reads (each a region and its size) between the two events and
// returns the bytes per second.
func (p *L2Probe) timed(regions []cuda.DevicePtr, bytes int64) (float64, error) {
	if err := p.ev[0].Record(p.stream); err != nil {
		return 0, err
	}
	for _, r := range regions {
		if err := p.read(r, bytes); err != nil {
			return 0, err
		}
	}
	if err := p.ev[1].Record(p.stream); err != nil {
		return 0, err
	}
	if err := p.ev[1].Synchronize(); err != nil {
		return 0, err
	}
	ms, err := cuda.ElapsedMS(p.ev[0], p.ev[1])
	if err != nil {
		return 0, err
	}
	if !(ms > 0) {
		return 0, fmt.Errorf("cuda: L2 probe: %d reads of %d B timed at %g ms", len(regions), bytes, ms)
	}
	return float64(len(regions)) * float64(bytes) / (float64(ms) / 1e3), nil
}

// Reuse measures one working set of bytes: back-to-back reads of it without
// a window, then with a persisting window over it (the set-aside at the
// device's maximum persisting L2, the window at most the device's largest,
// hit ratio set-aside ÷ window), then the same number of reads each of a
// different region cycling through the working set plus ColdBytes.
func (p *L2Probe) Reuse(bytes int64) (L2Reuse, error) {
	unpin, err := p.ctx.Pin()
	if err != nil {
		return L2Reuse{}, err
	}
	defer unpin()
	ws := l2ProbeBytes(bytes)
	total := ws + p.opts.ColdBytes
	buf, err := p.drv.MemAlloc(total)
	if err != nil {
		return L2Reuse{}, fmt.Errorf("cuda: L2 probe of %d B: %w", ws, err)
	}
	defer p.drv.MemFree(buf)
	if err := p.stream.MemsetD8Async(buf, 0, total); err != nil {
		return L2Reuse{}, err
	}
	same := make([]cuda.DevicePtr, p.opts.Reads)
	for i := range same {
		same[i] = buf
	}
	regions := total / ws // whole regions of the cycling buffer
	cold := make([]cuda.DevicePtr, p.opts.Reads)
	for i := range cold {
		cold[i] = buf + cuda.DevicePtr(int64(i)%regions*ws)
	}
	out := L2Reuse{Bytes: bytes}
	out.WindowBytes = min(ws, p.maxWin)
	out.PersistingL2Bytes = min(out.WindowBytes, p.info.MaxPersistingL2Bytes)
	if out.WindowBytes > 0 {
		out.HitRatio = float32(float64(out.PersistingL2Bytes) / float64(out.WindowBytes))
	}
	var reuse, window, stream []float64
	for r := 0; r < p.opts.Repeats; r++ {
		if err := p.read(buf, ws); err != nil { // warm: the working set is in the L2 as far as it fits
			return out, err
		}
		bw, err := p.timed(same, ws)
		if err != nil {
			return out, err
		}
		reuse = append(reuse, bw)
		if err := p.setWindow(buf, out); err != nil {
			return out, err
		}
		if err := p.read(buf, ws); err != nil {
			return out, err
		}
		bw, err = p.timed(same, ws)
		if err != nil {
			return out, err
		}
		window = append(window, bw)
		if err := p.clearWindow(); err != nil {
			return out, err
		}
		if bw, err = p.timed(cold, ws); err != nil {
			return out, err
		}
		stream = append(stream, bw)
	}
	out.ReuseBytesPerS, out.WindowBytesPerS, out.StreamBytesPerS = median(reuse), median(window), median(stream)
	return out, nil
}

// setWindow sets aside the persisting L2 and puts the window over buf.
func (p *L2Probe) setWindow(buf cuda.DevicePtr, o L2Reuse) error {
	if err := p.drv.SetLimit(cuda.LimitPersistingL2CacheSize, o.PersistingL2Bytes); err != nil {
		return err
	}
	return p.stream.SetAccessPolicyWindow(cuda.AccessPolicyWindow{BasePtr: buf, NumBytes: uintptr(o.WindowBytes),
		HitRatio: o.HitRatio, HitProp: cuda.AccessPersisting, MissProp: cuda.AccessStreaming})
}

// clearWindow removes the window, returns the persisting lines to normal
// and the set-aside to zero.
func (p *L2Probe) clearWindow() error {
	if err := p.stream.SetAccessPolicyWindow(cuda.AccessPolicyWindow{}); err != nil {
		return err
	}
	if err := p.stream.Synchronize(); err != nil {
		return err
	}
	if err := p.drv.ResetPersistingL2(); err != nil {
		return err
	}
	return p.drv.SetLimit(cuda.LimitPersistingL2CacheSize, 0)
}

// median is the middle value (the mean of the two middle ones).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Close frees the probe's stream, events, module and sink and releases the
// context (the libraries stay loaded).
func (p *L2Probe) Close() error {
	unpin, err := p.ctx.Pin()
	if err != nil {
		return err
	}
	defer unpin()
	return p.release()
}

func (p *L2Probe) release() error {
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if p.sink != 0 {
		keep(p.drv.MemFree(p.sink))
		p.sink = 0
	}
	if p.image != "" {
		keep(p.module.Unload())
		p.image = ""
	}
	releaseQueue(keep, &p.stream, p.ev[:], &p.ctx)
	if len(errs) > 0 {
		return fmt.Errorf("cuda: L2 probe close: %v", errs)
	}
	return nil
}
