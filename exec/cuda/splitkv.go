package cuda

import (
	_ "embed" // splitkv.cu
	"fmt"
	"math"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// splitKVSource is split-KV decode attention (splitkv.cu), compiled as a
// module of its own for every element type and architecture.
//
//go:embed splitkv.cu
var splitKVSource string

const (
	splitKVThreads = 128 // SPLITKV_THREADS
	// splitKVMaxSplits bounds the splits per row (and the workspace).
	splitKVMaxSplits = 64
	// splitKVMinKeys is the fewest cache positions per split the host
	// plans for: 64 keys are 8 iterations of a block at head dim 128 in a
	// 16-bit type (hd/8 lanes per key, 8 keys per pass of 128 threads); its
	// partial (2 + hd fp32) is 1.6 % of the 32 KiB of keys and values it
	// reads.
	splitKVMinKeys = 64
	// decodeThreadsPerSM is the resident threads per SM a decode attention
	// aims at. A decode step is bound by the bytes of the cache, and what
	// sets its speed is the loads in flight per SM (Little's law): each
	// thread of pb_attention_vV and pb_splitkv_partial_vV keeps a 16-byte
	// key and value of this iteration and of the next in flight (64 bytes),
	// so 768 threads keep 48 KiB in flight per SM, against the
	// 4.8 TB/s ÷ 132 SMs × ~0.8 µs loaded latency ≈ 29 KB an H200 needs
	// (H100: 3.35 TB/s, ≈ 20 KB) — a margin of 1.7× or more.
	decodeThreadsPerSM = 768
)

// splitKVSigs are the parameter lists of splitkv.cu's kernels.
const (
	splitKVPartialSig = "pppppiiiiiifi"   // qkv, kc, vc, pos, ws, seq0, q, hl, kvl, hd, context, scale_log2, bidir
	splitKVMergeSig   = "ppiii"           // ws, ao, hl, hd, S
	splitKVOneSig     = "pppppppiiiiiifi" // qkv, kc, vc, pos, ws, ao, count, seq0, q, hl, kvl, hd, context, scale_log2, bidir
)

// splitKVCount is the splits per row of a decode attention with pairs
// (row, head) pairs on sms SMs and a cache of context positions. Unsplit,
// pb_attention_vV runs a block of attnThreads per pair; where those leave
// fewer than decodeThreadsPerSM threads per SM, the keys are split so
// that pb_splitkv_partial_vV's blocks (splitKVThreads each) reach it, no
// split planned shorter than splitKVMinKeys positions, at most
// splitKVMaxSplits. 1 means no split (pb_attention_vV runs the op).
func splitKVCount(sms, pairs, context int) int {
	if sms <= 0 || pairs <= 0 {
		return 1
	}
	want := decodeThreadsPerSM * sms
	if pairs*attnThreads >= want {
		return 1
	}
	s := (want + pairs*splitKVThreads - 1) / (pairs * splitKVThreads)
	s = min(s, (context+splitKVMinKeys-1)/splitKVMinKeys, splitKVMaxSplits)
	return max(s, 1)
}

// splitKVState is split-KV attention's kernels (in the second module,
// extra.go) and workspace.
type splitKVState struct {
	loaded  bool
	why     string
	partial string // pb_splitkv_partial_vV for the rank's head dim
	one     string // pb_splitkv_vV: partials and merge in one launch ("": two launches)
	ws      cuda.DevicePtr
	wsBytes int64
	// count is pb_splitkv_vV's int32 per (row, head) of the largest split
	// op, 0 between launches; countN how many.
	count  cuda.DevicePtr
	countN int
}

// splits is op's split count (1: not split): decode ops only (one query
// per sequence).
func (c *Compute) splits(op *partition.Op) int {
	if !c.splitKV.loaded || op.Kind != partition.Attention || op.QLen != 1 {
		return 1
	}
	return splitKVCount(c.info.SMs, op.Rows*op.Heads, c.frame.Context)
}

// splitKVWorkspace is the fp32 partials of op: (m, l, a[hd]) per row,
// head and split.
func splitKVWorkspace(op *partition.Op, s int) int64 {
	return int64(op.Rows) * int64(op.Heads) * int64(s) * int64(2+op.HeadDim) * 4
}

// initSplitKV looks up splitkv.cu's kernels and allocates the workspace
// of the rank's largest split decode attention. A failure leaves split-KV
// off with the reason (pb_attention_vV runs every decode step, as before).
func (c *Compute) initSplitKV() error {
	sk := &c.splitKV
	if c.without["splitkv"] {
		sk.why = "turned off (Options.Without)"
		return nil
	}
	sk.partial = fmt.Sprintf("pb_splitkv_partial_v%d", c.attnV)
	for name, sig := range map[string]string{sk.partial: splitKVPartialSig, "pb_splitkv_merge": splitKVMergeSig} {
		if err := c.extraKernel(name, sig); err != nil {
			sk.why = err.Error()
			return nil
		}
	}
	sk.loaded = true
	if !c.without["splitkv-one-launch"] {
		sk.one = fmt.Sprintf("pb_splitkv_v%d", c.attnV)
		if err := c.extraKernel(sk.one, splitKVOneSig); err != nil {
			sk.one = "" // the two launches stay
		}
	}
	var err error
	prog := c.plan.Program(c.rank.Rank, partition.Decode)
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if s := c.splits(op); s > 1 {
			sk.wsBytes = max(sk.wsBytes, splitKVWorkspace(op, s))
			sk.countN = max(sk.countN, op.Rows*op.Heads)
		}
	}
	if sk.wsBytes == 0 {
		return nil
	}
	if sk.ws, err = c.alloc(pexec.AllocWorkspace, sk.wsBytes); err != nil || sk.one == "" {
		return err
	}
	if sk.count, err = c.alloc(pexec.AllocWorkspace, int64(4*sk.countN)); err != nil {
		return err
	}
	return c.stream.MemsetD8Async(sk.count, 0, int64(4*sk.countN))
}

// loadExtraModule compiles src for the device (a cubin where NVRTC can,
// else PTX) and loads it.
func (c *Compute) loadExtraModule(src, name string) (cuda.Module, string, error) {
	major, minor := c.info.ComputeMajor, c.info.ComputeMinor
	var errs []error
	for _, cubin := range []bool{true, false} {
		if cubin && !c.rtc.HasCUBIN() {
			continue
		}
		img, err := c.compileSource(src, name, major, minor, cubin)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m, err := c.drv.LoadModule(img.image)
		if err != nil {
			errs = append(errs, fmt.Errorf("loading the %s %s: %w", img.what, name, err))
			continue
		}
		return m, img.what, nil
	}
	return cuda.Module{}, "", fmt.Errorf("%s: %v", name, errs)
}

// splitKVAttention launches the split-KV kernels for op when splits picks
// more than one split, and reports whether it did.
func (c *Compute) splitKVAttention(op *partition.Op, qkv, ao dbuf, cache *dkv, st *mbState, seq0 int) (bool, error) {
	s := c.splits(op)
	if s <= 1 {
		return false, nil
	}
	if need := splitKVWorkspace(op, s); need > c.splitKV.wsBytes {
		return true, fmt.Errorf("cuda: split-KV attention of %s needs %d bytes of workspace, %d were allocated", op.Name, need, c.splitKV.wsBytes)
	}
	hl, hd := op.Heads, op.HeadDim
	scaleLog2 := float32(1 / math.Sqrt(float64(hd)) * math.Log2E)
	bidir := 0
	if op.Bidirectional {
		bidir = 1
	}
	grid := cuda.Dim3{X: uint32(op.Rows), Y: uint32(hl), Z: uint32(s)}
	if sk := &c.splitKV; sk.one != "" {
		if n := op.Rows * hl; n > sk.countN {
			return true, fmt.Errorf("cuda: split-KV attention of %s needs %d counts, %d were allocated", op.Name, n, sk.countN)
		}
		a := c.newArgs().p(qkv.p).p(cache.k).p(cache.v).p(st.pos).p(sk.ws).p(ao.p).p(sk.count).i(seq0).i(op.QLen).i(hl).i(op.KVHeads).i(hd).i(c.frame.Context).f(scaleLog2).i(bidir)
		return true, c.launchShared(sk.one, grid, cuda.D1(splitKVThreads), 0, a)
	}
	a := c.newArgs().p(qkv.p).p(cache.k).p(cache.v).p(st.pos).p(c.splitKV.ws).i(seq0).i(op.QLen).i(hl).i(op.KVHeads).i(hd).i(c.frame.Context).f(scaleLog2).i(bidir)
	if err := c.launchShared(c.splitKV.partial, cuda.Dim3{X: uint32(op.Rows), Y: uint32(hl), Z: uint32(s)}, cuda.D1(splitKVThreads), 0, a); err != nil {
		return true, err
	}
	a = c.newArgs().p(c.splitKV.ws).p(ao.p).i(hl).i(hd).i(s)
	return true, c.launchShared("pb_splitkv_merge", cuda.D2(op.Rows, hl), cuda.D1(splitKVThreads), 0, a)
}
