package cuda

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/dl"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Options configures New.
type Options struct {
	// Device is the GPU ordinal (CUDA_VISIBLE_DEVICES applies first).
	Device int
	// Graphs captures each compute-only run of decode ops (a segment:
	// between two communication ops) into a CUDA graph once it has run
	// GraphAfter times op by op, and launches the graph from then on.
	Graphs bool
	// GraphAfter is the eager runs of a segment before its capture (0: 2;
	// the first run is warm-up and is left out of the eager statistics).
	GraphAfter int
	// DType overrides the plan's model dtype for the GPU arithmetic: fp16,
	// bf16 or fp32 ("": the plan's). exec.Check plans are fp32, so a check
	// of fp16 arithmetic sets it.
	DType string
	// NoTiming turns off the CUDA events around each op (OpTimes is empty).
	NoTiming bool
	// HostWeights generates the weights on the host and uploads them even
	// where the device could generate them (gen.go).
	HostWeights bool
	// Without turns additions off, for timing them against what they
	// replace: a comma-separated list of flash, splitkv, rope-table,
	// device-weights, fused-norm, splitkv-one-launch, cublas-attention,
	// bias-act, cublaslt, cublaslt-gelu
	// ("": $PARTBENCH_CUDA_WITHOUT; extra.go).
	Without string
	// Weights makes the rank's shards given its model.Shard (nil: the
	// seeded model): a checkpoint's slices, read in windows of
	// HostWindowBytes and uploaded tensor by tensor through a pinned buffer
	// (checkpoint.go).
	Weights func(s model.Shard) (model.Source, error)
	// HostWindowBytes bounds the float32 bytes of the checkpoint's tensors
	// read ahead at once for Weights (0: DefaultHostWindowBytes): the host
	// holds at most two such windows (checkpoint.go).
	HostWindowBytes int64
	// Inputs are the token ids fed (nil: the seeded schedule): the prompt's
	// ids, then each sampled argmax when greedy, read back after every
	// sample (checkpoint.go). Graphs must be off.
	Inputs *model.Inputs
}

// cublasWorkspaceBytes is the fixed cuBLAS workspace, so GEMMs captured in
// a graph never allocate (32 MiB, what cuBLAS documents as enough for
// Hopper).
const cublasWorkspaceBytes = 32 << 20

// Compute is one rank's GPU backend: the rank's weight shards, KV cache and
// per-micro-batch buffers in device memory, in the model's 16-bit type
// (or fp32), and the ops of a partition.Program as cuBLAS GEMMs and NVRTC
// kernels on one stream of the device's primary context.
//
// A CUDA context is current per OS thread. Every method pins the calling
// goroutine to its thread (runtime.LockOSThread) and makes the context
// current before its first CUDA call, and unpins on return; a graph
// capture keeps the goroutine pinned from a segment's first op to its
// last, so the capture begins and ends on one thread. (A dedicated worker
// thread would also do, but its hand-off per op would be charged to the
// host launch time the graphs are measured against.) A Compute is not
// safe for concurrent use: exec calls it from the rank's goroutine.
type Compute struct {
	frame *pexec.Frame[dbuf, *dtensor]
	// pinned is the paused hidden state's host copy (pause.go), of which
	// offloaded bytes hold x; nil until the first OffloadX.
	pinned    *cuda.Pinned
	offloaded int64
	plan      *partition.Plan
	rank      partition.Rank
	opts      Options
	dt        dtype

	seed                  int64
	vocabTok              int
	promptBase, synthBase uint64
	attnV                 int
	attnName              string // pb_attention_v<attnV>

	drv          *cuda.Driver
	blas         *cuda.BLAS
	rtc          *cuda.NVRTC
	dev          cuda.Device
	info         cuda.DeviceInfo
	ctx          *cuda.Context
	stream       cuda.Stream
	handle       *cuda.Handle
	module       cuda.Module
	loaded       bool
	k            map[string]kernel
	image        string          // "cubin sm_90" or "ptx compute_90"
	flash        flashState      // the tensor-core attention module (flash.go)
	splitKV      splitKVState    // split-KV decode attention (splitkv.go)
	extra        extraState      // the second module: splitkv.cu, fused.cu (extra.go)
	rope         ropeState       // the rotary table (extra.go)
	fuse         fuseState       // residual add + norm as one kernel (fuse.go)
	biasAct      biasActState    // a linear's bias + the activation after it as one kernel (biasact.go)
	lt           ltState         // cuBLASLt with the bias as the GEMM's epilogue (biasact_lt.go)
	blasWS       cuda.DevicePtr  // cuBLAS's workspace of cublasWorkspaceBytes (0: none)
	blasAttn     blasAttnState   // prefill attention through cuBLAS (attnblas.go)
	gemv         gemvState       // small-M GEMMs on pb_gemv_mMM (gemv.go)
	weightSource string          // where the weights were generated (gen.go)
	without      map[string]bool // additions turned off (Options.Without)

	// hostPeakBytes is the most float32 bytes of checkpoint tensors the
	// host-weights load held at once (checkpoint.go).
	hostPeakBytes int64

	allocs    []cuda.DevicePtr
	allocated int64
	byKind    map[string]int64
	kv        map[int]*dkv
	mbs       []*mbState
	errFlag   cuda.DevicePtr // int32[2]: {row + 1, token bits} of an invalid token
	promptDev cuda.DevicePtr // float32 [batch][prompt]: SetPrompt's ids
	promptSet bool           // Input reads prompt positions from promptDev

	argBuf    args
	flagDirty bool // an input kernel ran since Sync last read errFlag
	replay    bool // ops update host state only: their segment's graph runs them
	capturing bool
	graphs    *graphs
	timer     *timer
	marks     []mark // exec.DeviceClock's marks since Marks last read them
	stats     LaunchStats
	fault     error // a device-side failure, returned by every later call
	closeOnce sync.Once
	closeErr  error

	mem memMeter // device memory around the setup (buffer.go)
}

var (
	_ pexec.Compute            = (*Compute)(nil)
	_ pexec.DeviceClock        = (*Compute)(nil)
	_ pexec.AllocationItemizer = (*Compute)(nil)
	_ pexec.Inspector          = (*Compute)(nil)
)

// dtensor is a weight shard in device memory, row-major [k][n].
type dtensor struct {
	k, n int
	p    cuda.DevicePtr
}

// Shape is [k][n].
func (t *dtensor) Shape() (k, n int) { return t.k, t.n }

// dkv is one layer's KV cache: [seq][pos][kvl·hd] for keys and for values.
type dkv struct{ k, v cuda.DevicePtr }

// dbuf is a device buffer of n elements (float32 for tokens).
type dbuf struct {
	p   cuda.DevicePtr
	n   int
	f32 bool
}

// Len is the number of elements.
func (b dbuf) Len() int { return b.n }

// Prefix is the first n elements.
func (b dbuf) Prefix(n int) dbuf { b.n = n; return b }

// outLayout is how a sampled result's logits lie (for Output).
type outLayout struct{ seqs, padded, vocab, shards int }

// mbState is one micro-batch's device state beside exec.Frame's buffers
// and pass positions.
type mbState struct {
	pos       cuda.DevicePtr // int32: the current pass's first position, read by the kernels
	posHost   int            // what pos holds (−1: unknown)
	out       cuda.DevicePtr // the last sample's output (elements of the model type)
	outElems  int
	sampled   cuda.DevicePtr // int32 per sequence
	layout    outLayout      // of the logits in out (seqs 0: hidden states)
	hasOut    bool
	hasSample bool
}

// New loads the CUDA driver, cuBLAS and NVRTC, makes rank's Compute on
// opts.Device, generates the rank's weight shards on the host with the
// model package's generator (so the GPU and the CPU reference hold the same
// model), converts them to the element type and uploads them, and
// allocates the KV cache and the buffers. Where there is no driver it
// fails with "cuda: no CUDA driver: " and every place that was searched.
func New(plan *partition.Plan, rank int, opts Options) (*Compute, error) {
	if rank < 0 || rank >= len(plan.Ranks) {
		return nil, fmt.Errorf("cuda: rank %d outside the plan's %d ranks", rank, len(plan.Ranks))
	}
	name := opts.DType
	if name == "" {
		name = plan.Model.DType
	}
	dt, err := lookupDType(name)
	if err != nil {
		return nil, err
	}
	drv, err := loadDriver()
	if err != nil {
		return nil, noDriver(err)
	}
	without, err := parseWithout(opts.Without) // extra.go
	if err != nil {
		return nil, err
	}
	c := &Compute{plan: plan, rank: plan.Ranks[rank], opts: opts, dt: dt, drv: drv, without: without}
	c.timer = newTimer(c, !opts.NoTiming)
	if err := c.init(); err != nil {
		c.Close()
		return nil, fmt.Errorf("cuda: rank %d: %w", rank, err)
	}
	dl.FixSignalStacks() // handlers the driver, cuBLAS or NVRTC installed while initialising
	return c, nil
}

// noDriver says that no usable driver was found, with dl's list of the
// places searched when the library is missing.
func noDriver(err error) error {
	var nf *dl.NotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("cuda: no CUDA driver: %w", nf)
	}
	if errors.Is(err, dl.ErrNoCgo) {
		return fmt.Errorf("cuda: no CUDA driver: %w", dl.ErrNoCgo)
	}
	return fmt.Errorf("cuda: no usable CUDA driver: %w", err)
}

func (c *Compute) init() error {
	p := c.plan
	sh := p.Shard(c.rank.TPIndex)
	c.seed = p.Config.Run.Seed
	c.vocabTok = model.TokenVocab(p.Model)
	c.promptBase, c.synthBase = keyBase(c.seed, promptTensor), keyBase(c.seed, syntheticTensor)
	if c.attnV = attentionVec(sh.HeadDim, c.dt.bytes); c.attnV == 0 {
		return fmt.Errorf("head_dim %d is not supported by the attention kernel (head_dim/V must be a power of two of at most 32 for V in 8, 4, 2, 1)", sh.HeadDim)
	}
	c.attnName = fmt.Sprintf("pb_attention_v%d", c.attnV)
	if err := sh.Check(); err != nil {
		return err
	}

	var err error
	if c.dev, err = c.drv.Device(c.opts.Device); err != nil {
		return err
	}
	if c.info, err = c.dev.Info(); err != nil {
		return err
	}
	if c.ctx, err = c.dev.PrimaryContext(); err != nil {
		return err
	}
	unpin, err := c.ctx.Pin()
	if err != nil {
		return err
	}
	defer unpin()
	c.meterSetup(true) // buffer.go
	// Non-blocking: no implicit synchronization with the legacy default
	// stream, which other ranks' threads in this process may use while
	// this one captures.
	if c.stream, err = c.drv.NewStream(cuda.StreamNonBlocking); err != nil {
		return err
	}
	if err := c.initBLAS(); err != nil {
		return err
	}
	if err := c.initKernels(); err != nil {
		return err
	}
	c.initFlash() // flash.go: tensor-core prefill attention where the device and dtype allow
	if c.errFlag, err = c.alloc(pexec.AllocWorkspace, 8); err != nil {
		return err
	}
	if err := c.stream.MemsetD8Async(c.errFlag, 0, 8); err != nil {
		return err
	}
	if err := c.initBuffers(); err != nil {
		return err
	}
	c.initExtra()                           // extra.go: the second module (split-KV, fused kernels)
	if err := c.initSplitKV(); err != nil { // splitkv.go: after the frame, whose decode ops size its workspace
		return err
	}
	if err := c.initBlasAttn(); err != nil { // attnblas.go: after the frame, whose prefill ops size its workspace
		return err
	}
	if err := c.initRope(); err != nil { // extra.go: the rotary table
		return err
	}
	c.initFuse()    // fuse.go: residual add + norm as one kernel where the Programs allow
	c.initBiasAct() // biasact.go: bias + activation as one kernel where the Programs allow
	c.initLt()      // biasact_lt.go: cuBLASLt bias epilogues where the library loads
	if err := c.initWeights(); err != nil {
		return err
	}
	if err := c.initGemv(); err != nil { // gemv.go: after the weights and buffers, on which it times its shapes
		return err
	}
	if err := c.initInputs(); err != nil { // checkpoint.go: Options.Inputs' prompt
		return err
	}
	c.graphs = newGraphs(c)
	if err := c.stream.Synchronize(); err != nil {
		return err
	}
	c.meterSetup(false) // buffer.go
	return nil
}

func (c *Compute) initBLAS() error {
	var err error
	if c.blas, err = loadCUBLAS(); err != nil {
		return fmt.Errorf("no cuBLAS: %w", err)
	}
	if c.handle, err = c.blas.NewHandle(); err != nil {
		return err
	}
	if err := c.handle.SetStream(c.stream); err != nil {
		return err
	}
	if err := c.handle.SetMathMode(cuda.DefaultMath); err != nil {
		return err
	}
	if c.handle.HasWorkspace() {
		ws, err := c.alloc(pexec.AllocWorkspace, cublasWorkspaceBytes)
		if err != nil {
			return err
		}
		if err := c.handle.SetWorkspace(ws, cublasWorkspaceBytes); err != nil {
			return err
		}
		c.blasWS = ws // biasact_lt.go: cuBLASLt shares it (one stream: never at once)
	}
	return nil
}

// alloc allocates device memory and counts it under kind (exec.Alloc*).
func (c *Compute) alloc(kind string, bytes int64) (cuda.DevicePtr, error) {
	p, err := c.drv.MemAlloc(bytes)
	if err != nil {
		return 0, err
	}
	c.allocs = append(c.allocs, p)
	c.allocated += bytes
	if c.byKind == nil {
		c.byKind = map[string]int64{}
	}
	c.byKind[kind] += bytes
	return p, nil
}

// AllocatedByKind is AllocatedBytes by kind (exec.AllocationItemizer).
func (c *Compute) AllocatedByKind() map[string]int64 { return maps.Clone(c.byKind) }

// upload copies float32 values, converted to the element type, to dst.
func (c *Compute) upload(dst cuda.DevicePtr, v []float32) error {
	return c.stream.CopyHtoDAsync(dst, c.dt.encode(v))
}

func (c *Compute) initWeights() error {
	if c.opts.Weights != nil {
		return c.sourceWeights() // checkpoint.go
	}
	gen := c.plan.Generator(c.rank.Rank)
	if done, err := c.genWeights(gen); done || err != nil { // gen.go: on the device where pb_gen loaded
		return err
	}
	for _, ts := range c.plan.Tensors(c.rank.Rank) {
		t, err := gen.Tensor(ts.Layer, ts.Name)
		if err != nil {
			return err
		}
		p, err := c.alloc(pexec.AllocWeights, int64(len(t.Data))*int64(c.dt.bytes))
		if err != nil {
			return err
		}
		if err := c.upload(p, t.Data); err != nil {
			return err
		}
		c.frame.Weights[pexec.TensorKey{Layer: ts.Layer, Name: ts.Name}] = &dtensor{k: t.K, n: t.N, p: p}
	}
	return c.stream.Synchronize() // the staged host copies may go
}

// initBuffers allocates the KV cache of each layer, exec.Frame's buffers
// (plan.BufferElems, elements of the model type, tokens float32) and each
// micro-batch's device state.
func (c *Compute) initBuffers() error {
	p := c.plan
	eb := int64(c.dt.bytes)
	c.kv = map[int]*dkv{}
	kvElems := int64(p.KVElems(c.rank.Rank))
	for _, l := range c.rank.Layers {
		kp, err := c.alloc(pexec.AllocKV, kvElems*eb)
		if err != nil {
			return err
		}
		vp, err := c.alloc(pexec.AllocKV, kvElems*eb)
		if err != nil {
			return err
		}
		for _, q := range []cuda.DevicePtr{kp, vp} {
			if err := c.stream.MemsetD8Async(q, 0, kvElems*eb); err != nil {
				return err
			}
		}
		c.kv[l] = &dkv{k: kp, v: vp}
	}

	f, err := pexec.NewFrame[dbuf, *dtensor]("cuda", p, c.rank.Rank, func(b model.Buf, n int) (dbuf, error) {
		size := int64(n) * eb
		if b == model.Tokens {
			size = int64(n) * 4
		}
		ptr, err := c.alloc(pexec.AllocBuffers, max(size, 4))
		return dbuf{p: ptr, n: n, f32: b == model.Tokens}, err
	})
	if err != nil {
		return err
	}
	c.frame = f
	outElems := p.OutputElems(c.rank.Rank)
	for range p.Microbatches {
		st := &mbState{posHost: -1, outElems: outElems}
		var err error
		if st.pos, err = c.alloc(pexec.AllocBuffers, 4); err != nil {
			return err
		}
		if outElems > 0 {
			if st.out, err = c.alloc(pexec.AllocBuffers, int64(outElems)*eb); err != nil {
				return err
			}
			if st.sampled, err = c.alloc(pexec.AllocBuffers, int64(p.MicrobatchSize)*4); err != nil {
				return err
			}
		}
		c.mbs = append(c.mbs, st)
	}
	return nil
}

// pin pins the calling goroutine to its thread with the context current.
func (c *Compute) pin() (func(), error) { return c.ctx.Pin() }

// enter pins the context for a call that queues or waits for work (Exec,
// Sync), or reports that ctx has ended or an earlier fault.
func (c *Compute) enter(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.fault != nil {
		return nil, c.fault
	}
	return c.pin()
}

// Buffer returns micro-batch mb's buffer b as its first elems elements, a
// *Buffer in device memory (b is an op's In or Out, or
// model.Logits.Gathered()); elements are of the model type, tokens float32.
func (c *Compute) Buffer(b model.Buf, mb, elems int) (pexec.Buffer, error) {
	if c.fault != nil {
		return nil, c.fault
	}
	v, err := c.frame.Buffer(b, mb, elems)
	if err != nil {
		return nil, err
	}
	return c.newBuffer(b, mb, v), nil
}

// Output is the last stage's result of micro-batch mb's last sampling
// pass, copied back as float32 in the reference's layout: logits [seqs][vocab]
// with an LM head, else the final hidden state of each sequence's last
// position [seqs][hidden]; nil on other stages (and after a failure, which
// the next call reports).
func (c *Compute) Output(mb int) []float32 {
	if mb < 0 || mb >= len(c.mbs) {
		return nil
	}
	st := c.mbs[mb]
	if !st.hasOut || c.fault != nil {
		return nil
	}
	raw, err := c.download(st.out, st.outElems)
	if err != nil {
		c.fault = err
		return nil
	}
	vals := c.dt.decode(raw)
	l := st.layout
	if l.seqs == 0 {
		return vals
	}
	return model.LogitsByVocab(vals, l.seqs, l.padded, l.vocab, l.shards)
}

// Sampled is the argmax token of each sequence of micro-batch mb at its
// last sampling pass (nil without an LM head, or on a rank that does not
// sample).
func (c *Compute) Sampled(mb int) []int {
	if mb < 0 || mb >= len(c.mbs) {
		return nil
	}
	st := c.mbs[mb]
	if !st.hasSample || c.fault != nil {
		return nil
	}
	n := c.plan.MicrobatchSize
	raw := make([]int32, n)
	if err := c.downloadInto(cuda.Bytes(raw), st.sampled); err != nil {
		c.fault = err
		return nil
	}
	out := make([]int, n)
	for i, v := range raw {
		out[i] = int(v)
	}
	return out
}

// download copies n elements of the model type at p to the host, after the
// work queued before it.
func (c *Compute) download(p cuda.DevicePtr, n int) ([]byte, error) {
	raw := make([]byte, n*c.dt.bytes)
	return raw, c.downloadInto(raw, p)
}

func (c *Compute) downloadInto(dst []byte, p cuda.DevicePtr) error {
	unpin, err := c.pin()
	if err != nil {
		return err
	}
	defer unpin()
	if err := c.stream.CopyDtoHAsync(dst, p); err != nil {
		return err
	}
	return c.stream.Synchronize()
}

// Sync waits for the queued work, reports a device-side failure (an
// invalid token id) and collects the finished op timings.
func (c *Compute) Sync(ctx context.Context) error {
	unpin, err := c.enter(ctx)
	if err != nil {
		return err
	}
	defer unpin()
	if c.capturing {
		// A caller that waits between the ops of a segment (exec.Emulate
		// times every op) leaves no step to capture: run the ops recorded
		// so far op by op and keep the segment eager.
		if err := c.dropCapture(errors.New("a sync inside the segment")); err != nil {
			return err
		}
	}
	if err := c.stream.Synchronize(); err != nil {
		c.fault = err
		return err
	}
	if c.flagDirty {
		if err := c.checkFlag(); err != nil {
			return err
		}
		c.flagDirty = false
	}
	return c.timer.flush()
}

// checkFlag reads the device's invalid-token report.
func (c *Compute) checkFlag() error {
	var flag [2]int32
	if err := c.stream.CopyDtoHAsync(cuda.Bytes(flag[:]), c.errFlag); err != nil {
		return err
	}
	if flag[0] != 0 {
		c.fault = fmt.Errorf("cuda: token %v of row %d is not an id in [0, %d)",
			math.Float32frombits(uint32(flag[1])), flag[0]-1, c.vocabTok)
		return c.fault
	}
	return nil
}

// AllocatedBytes is the device memory the rank holds: weights, KV cache,
// buffers and the cuBLAS workspace.
func (c *Compute) AllocatedBytes() int64 { return c.allocated }

// DeviceInfo describes the rank's GPU.
func (c *Compute) DeviceInfo() cuda.DeviceInfo { return c.info }

// DType is the element type the GPU computes in ("fp16", "bf16", "fp32").
func (c *Compute) DType() string { return c.dt.name }

// Kernels says how the kernels were built ("cubin sm_90" or "ptx compute_90").
func (c *Compute) Kernels() string { return c.image }

// Stream is the stream every op of the rank runs on; a communicator that
// works on the rank's buffers (NCCL) queues its calls on it.
func (c *Compute) Stream() cuda.Stream { return c.stream }

// Context is the device's primary context the rank uses.
func (c *Compute) Context() *cuda.Context { return c.ctx }

// Do runs fn pinned to an OS thread with the rank's context current: the
// way to make other CUDA-bound calls (NCCL) on the rank's device.
func (c *Compute) Do(fn func() error) error {
	unpin, err := c.pin()
	if err != nil {
		return err
	}
	defer unpin()
	return fn()
}

// Close waits for queued work and releases the rank's resources: graphs,
// events, the module, the cuBLAS handle, the stream, device memory and its
// reference to the context (the libraries stay loaded for the process).
// Closing twice does nothing.
func (c *Compute) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.release() })
	return c.closeErr
}

func (c *Compute) release() error {
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.ctx != nil {
		if unpin, err := c.ctx.Pin(); err == nil {
			if c.capturing {
				c.abandonCapture()
			}
			if c.stream != (cuda.Stream{}) {
				keep(c.stream.Synchronize())
			}
			if c.graphs != nil {
				keep(c.graphs.destroy())
			}
			keep(c.timer.destroy())
			if c.loaded {
				keep(c.module.Unload())
			}
			if c.flash.loaded {
				keep(c.flash.module.Unload())
			}
			if c.extra.loaded {
				keep(c.extra.module.Unload())
			}
			keep(c.closeLt()) // biasact_lt.go
			if c.handle != nil {
				keep(c.handle.Destroy())
			}
			if c.stream != (cuda.Stream{}) {
				keep(c.stream.Destroy())
			}
			for _, p := range c.allocs {
				keep(c.drv.MemFree(p))
			}
			keep(c.freePinned())
			unpin()
		} else {
			keep(err)
		}
		keep(c.ctx.Release())
	}
	c.allocs, c.kv, c.mbs, c.frame = nil, nil, nil, nil
	return errors.Join(errs...) // the libraries stay loaded (libs.go)
}

// Describe names the device for results files: GPU, compute capability,
// driver, element type and how the kernels were built.
func (c *Compute) Describe() string {
	i := c.info
	return fmt.Sprintf("%s (sm_%d%d, GPU %d, CUDA driver %d.%d), %s, kernels %s",
		i.Name, i.ComputeMajor, i.ComputeMinor, i.Ordinal, i.DriverVersion/1000, i.DriverVersion%1000/10, c.dt.name, c.image) +
		c.describeExtra() + // flash.go
		c.describeBias() // biasact_lt.go
}
