package cuda

import (
	_ "embed" // fused.cu
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	kernelsrc "github.com/partbench/partbench/exec/cuda/kernels"
	"github.com/partbench/partbench/partition"
)

// fusedSource is the fused row kernels (fused.cu).
//
//go:embed fused.cu
var fusedSource string

// extraSource is the backend's second module, beside kernelSource: the
// kernels that run on every architecture and element type but came after
// it (split-KV decode attention, the fused row kernels, the weight
// generator), with the shared headers they include expanded once.
func extraSource() string { return extraModule() }

var extraModule = sync.OnceValue(func() string {
	return expandModule("partbench_extra.cu", splitKVSource+"\n"+fusedSource+"\n"+genSource+"\n"+attnBlasSource+"\n"+biasActSource+"\n"+gemvSource)
})

// flashModule is flash.cu with the shared headers it includes expanded:
// what NVRTC compiles (it is given no include paths).
var flashModule = sync.OnceValue(func() string { return expandModule("flash.cu", flashSource) })

// expandModule is text (named name) with its includes of the embedded
// kernel headers expanded, each once. The headers are embedded, so a
// failure is a build defect.
func expandModule(name, text string) string {
	s, err := kernelsrc.Expand(name, text)
	if err != nil {
		panic("cuda: " + err.Error())
	}
	return s
}

// extraState is the second module, or why it is not loaded (the backend
// then runs kernelSource's kernels for everything, as before).
type extraState struct {
	module cuda.Module
	loaded bool
	image  string
	why    string
}

// initExtra compiles and loads the second module. A failure is kept in
// c.extra.why, never returned: each of its users falls back.
func (c *Compute) initExtra() {
	m, what, err := c.loadExtraModule(extraSource(), "partbench_extra.cu")
	if err != nil {
		c.extra.why = err.Error()
		return
	}
	c.extra = extraState{module: m, loaded: true, image: what}
}

// withoutChoices are Options.Without's values.
var withoutChoices = []string{"flash", "splitkv", "rope-table", "device-weights", "fused-norm", "splitkv-one-launch", "cublas-attention", "bias-act", "cublaslt", "cublaslt-gelu"}

// withoutEnv is Options.Without's environment variable.
const withoutEnv = "PARTBENCH_CUDA_WITHOUT"

// parseWithout reads Options.Without (or $PARTBENCH_CUDA_WITHOUT when it
// is empty) into a set, refusing a value it does not know.
func parseWithout(s string) (map[string]bool, error) {
	from := "Options.Without"
	if s == "" {
		s, from = os.Getenv(withoutEnv), withoutEnv
	}
	set := map[string]bool{}
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !slices.Contains(withoutChoices, v) {
			return nil, fmt.Errorf("cuda: %s=%q: %q is not one of %s", from, s, v, strings.Join(withoutChoices, ", "))
		}
		set[v] = true
	}
	if err := flashVariantFromEnv(set); err != nil { // flash_variants.go
		return nil, err
	}
	if err := gemvModeFromEnv(set); err != nil { // gemv.go
		return nil, err
	}
	return set, nil
}

// extraKernel looks up name in the second module into c.k.
func (c *Compute) extraKernel(name, sig string) error {
	if !c.extra.loaded {
		return fmt.Errorf("cuda: the second kernel module is not loaded: %s", c.extra.why)
	}
	fn, err := c.extra.module.Function(name)
	if err != nil {
		return err
	}
	c.k[name] = kernel{fn: fn, sig: sig}
	return nil
}

// extraLaunch is the launchBound of every kernel of flash.cu and the
// second module (the largest launch the backend makes: threads per block,
// bytes of dynamic shared memory, and whether that is above 48 KiB, raised
// with cuFuncSetAttribute); launchShared refuses a launch beyond it and make
// kernel-check holds each compiled kernel to it, as kernelLaunch for the
// first module.
var extraLaunch = func() map[string]launchBound {
	m := map[string]launchBound{
		"pb_splitkv_partial_v1": {threads: splitKVThreads},
		"pb_splitkv_partial_v2": {threads: splitKVThreads},
		"pb_splitkv_partial_v4": {threads: splitKVThreads},
		"pb_splitkv_partial_v8": {threads: splitKVThreads},
		"pb_splitkv_merge":      {threads: splitKVThreads},
		"pb_splitkv_v1":         {threads: splitKVThreads},
		"pb_splitkv_v2":         {threads: splitKVThreads},
		"pb_splitkv_v4":         {threads: splitKVThreads},
		"pb_splitkv_v8":         {threads: splitKVThreads},
		"pb_rope_kv_table":      {threads: rowThreads},
		"pb_add_rmsnorm":        {threads: rowThreads},
		"pb_add_layernorm":      {threads: rowThreads},
		"pb_gen":                {threads: flatThreads},
		"pb_causal_softmax":     {threads: rowThreads},
		"pb_bias_act":           {threads: flatThreads},
	}
	for _, mm := range gemvVariants {
		m[gemvKernelName(mm)] = launchBound{threads: gemvThreads}
	}
	for _, fk := range flashAllKernels() {
		smem := flashSharedBytes(fk.hd, fk.br, 2)
		m[fk.name()] = launchBound{threads: fk.threads(), dynSmem: smem, optIn: smem > cuda.DefaultDynamicSharedBytes}
	}
	return m
}()

// checkExtraLaunch refuses a launch of name beyond its extraLaunch entry.
func checkExtraLaunch(name string, threads, dynSmem int) error {
	return checkBound(extraLaunch, "extraLaunch", name, threads, dynSmem)
}

// The fused residual add + norm kernels' parameter lists: x, y, out, w,
// (b,) H, eps (fuse.go launches them for a residual and the norm after it).
const (
	addRMSNormSig   = "ppppif"
	addLayerNormSig = "pppppif"
)

// ropeTableSig is pb_rope_kv_table's parameter list: qkv, kc, vc, table,
// pos, seq0, q, hl, kvl, hd, context.
const ropeTableSig = "pppppiiiiii"

// ropeState is the rotary table in device memory: fp32 (cos, sin) of every
// position of the context and pair of the head dim, for base theta.
type ropeState struct {
	table cuda.DevicePtr
	theta float64
}

// initRope uploads the rotary table for the rank's attention (its first
// attention op's base; an op with another base keeps pb_rope_kv). Nothing
// when the model has no rotary embeddings or the second module is not
// loaded.
func (c *Compute) initRope() error {
	if c.without["rope-table"] {
		return nil
	}
	if err := c.extraKernel("pb_rope_kv_table", ropeTableSig); err != nil {
		return nil //nolint:nilerr // pb_rope_kv stays
	}
	var theta float64
	var hd int
	prog := c.plan.Program(c.rank.Rank, partition.Prefill)
	for i := range prog.Ops {
		if op := &prog.Ops[i]; op.Kind == partition.Attention {
			theta, hd = op.RopeTheta, op.HeadDim
			break
		}
	}
	if theta <= 0 {
		return nil
	}
	t := ropeTable(c.frame.Context, hd, theta)
	p, err := c.alloc(pexec.AllocWorkspace, int64(4*len(t)))
	if err != nil {
		return err
	}
	if err := c.stream.CopyHtoDAsync(p, dtypes["fp32"].encode(t)); err != nil {
		return err
	}
	c.rope = ropeState{table: p, theta: theta}
	return c.stream.Synchronize()
}

// ropeKV launches the rotation of q and k and the cache append of op:
// from the table where it was made for op's base, else pb_rope_kv.
func (c *Compute) ropeKV(op *partition.Op, qkv dbuf, cache *dkv, st *mbState, seq0 int) error {
	if c.rope.table == 0 || op.RopeTheta != c.rope.theta {
		a := c.newArgs().p(qkv.p).p(cache.k).p(cache.v).p(st.pos).i(seq0).i(op.QLen).i(op.Heads).i(op.KVHeads).i(op.HeadDim).i(c.frame.Context).f(float32(op.RopeTheta))
		return c.launch("pb_rope_kv", cuda.D1(op.Rows), cuda.D1(rowThreads), a)
	}
	a := c.newArgs().p(qkv.p).p(cache.k).p(cache.v).p(c.rope.table).p(st.pos).i(seq0).i(op.QLen).i(op.Heads).i(op.KVHeads).i(op.HeadDim).i(c.frame.Context)
	return c.launchShared("pb_rope_kv_table", cuda.D2(op.Rows, ropeBlocksPerRow(op, c.info.SMs)), cuda.D1(rowThreads), 0, a)
}

// ropeBlocksPerRow is pb_rope_kv_table's blocks per row of op: enough for
// every item of a row ((hl + kvl)·hd/2 pairs and kvl·hd v elements, one
// per thread) where the rows alone would leave SMs without blocks (a
// decode step: one row per sequence), and no more than 4 blocks per SM
// over all rows; 1 for a prefill pass, whose rows fill the device.
func ropeBlocksPerRow(op *partition.Op, sms int) int {
	items := (op.Heads+op.KVHeads)*(op.HeadDim/2) + op.KVHeads*op.HeadDim
	need := (items + rowThreads - 1) / rowThreads
	room := (4*max(sms, 1) + op.Rows - 1) / op.Rows
	return max(1, min(need, room))
}
