package cuda

import (
	_ "embed" // flash.cu
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// flashSource is the tensor-core prefill attention (flash.cu, as written;
// flashModule with its headers expanded), compiled as a module of its own
// beside kernelSource: for fp16 and bf16 only (the
// m16n8k16 mma has no fp32 form), and only for sm_80 and newer (mma.sync
// m16n8k16, ldmatrix and cp.async).
//
//go:embed flash.cu
var flashSource string

// Launch shapes of pb_flash_fwd_dD[_b128]: 64 or 128 queries per block
// (flashBrs), 16 per warp, so 2·br threads; key tiles of 64 (FLASH_BC in
// flash.cu).
const (
	flashBr = 64 // the smaller query tile (and the fewest queries flash runs)
	flashBc = 64
)

// flashBrs are the query tiles flash.cu is instantiated for.
var flashBrs = []int{64, 128}

// flashThreads is the block of query tile br: br/16 warps.
func flashThreads(br int) int { return 2 * br }

// flashKernelSig is the parameter list of every pb_flash_fwd_dD, in
// launch.go's letters: qkv, ao, kc, vc, pos, seq0, q, hl, kvl, context,
// scale_log2, bidir.
const flashKernelSig = "pppppiiiiifi"

// flashHeadDims are the head dims flash.cu is instantiated for.
var flashHeadDims = []int{64, 128}

// flashKernelName is the kernel for head dim hd and query tile br.
func flashKernelName(hd, br int) string {
	if br == flashBr {
		return fmt.Sprintf("pb_flash_fwd_d%d", hd)
	}
	return fmt.Sprintf("pb_flash_fwd_d%d_b%d", hd, br)
}

// flashSharedBytes is the dynamic shared memory of a flash kernel: Q one
// br-row tile, K and V two 64-row tiles each (double buffering), rows of
// hd+8 elements (the pad spreads ldmatrix's rows over the banks).
func flashSharedBytes(hd, br, elemBytes int) int { return (br + 4*flashBc) * (hd + 8) * elemBytes }

// flashKey is a flash kernel's head dim and query tile.
type flashKey struct{ hd, br int }

// flashMinArch is the first compute capability with the instructions
// flash.cu uses (sm_80).
const flashMinArch = 80

// flashMinQ is the fewest queries per sequence for which prefill runs on
// pb_flash_fwd_dD: below one query tile (64) most of the tile's mma rows
// are padding, and pb_attention_vV, one block per query row, is the
// better fit (decode, q = 1, always takes it).
const flashMinQ = flashBr

// flashState is the tensor-core attention module of a Compute: loaded, or
// the reason it is not (the backend then runs pb_attention_vV for every
// shape, as before).
type flashState struct {
	module cuda.Module
	loaded bool
	image  string              // "cubin sm_90" or "ptx compute_90"
	shared map[flashKey]int    // dynamic shared memory per kernel, set on each function
	why    string              // why flash.cu is not used, when !loaded
	names  map[flashKey]string // the kernel prefill runs per shape: the selected variant's (flashVariantName)
	// variant is the one $PARTBENCH_FLASH_VARIANT selected (flash_variants.go);
	// every variant's kernels are loaded into c.k.
	variant flashVariant
}

// initFlash compiles flash.cu for the device and the element type, loads
// it, looks up its kernels into c.k and raises each one's dynamic shared
// memory limit (cuFuncSetAttribute) where it needs more than 48 KiB. Any
// failure leaves c.flash unloaded with the reason: the backend keeps its
// CUDA-core attention, so a missing feature never stops a run.
func (c *Compute) initFlash() {
	f := &c.flash
	major, minor := c.info.ComputeMajor, c.info.ComputeMinor
	switch {
	case c.without["flash"]:
		f.why = "turned off (Options.Without)"
		return
	case c.dt.bytes != 2:
		f.why = "fp32 has no m16n8k16 mma"
		return
	case major*10+minor < flashMinArch:
		f.why = fmt.Sprintf("sm_%d%d is older than sm_80", major, minor)
		return
	case !c.flashFits():
		f.why = fmt.Sprintf("no attention of the plan has head dim %v and %d or more queries", flashHeadDims, flashMinQ)
		return // nothing to compile (NVRTC takes seconds over flash.cu)
	}
	f.variant = selectedFlashVariant(c.without)
	var errs []string
	for _, cubin := range []bool{true, false} {
		if cubin && !c.rtc.HasCUBIN() {
			continue
		}
		img, err := c.compileSourceWith(flashModule(), "flash.cu", major, minor, cubin, flashSetDefine(f.variant))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		m, err := c.drv.LoadModule(img.image)
		if err != nil {
			errs = append(errs, fmt.Sprintf("loading the %s flash kernels: %v", img.what, err))
			continue
		}
		f.module, f.loaded, f.image = m, true, img.what
		break
	}
	if !f.loaded {
		f.why = strings.Join(errs, "; ")
		return
	}
	f.shared, f.names = map[flashKey]int{}, map[flashKey]string{}
	errs = append(errs, c.flashFunctions(f.module, f.variant)...)
	if len(f.names) == 0 {
		f.why = strings.Join(errs, "; ")
	}
}

// flashFunctions looks up the kernels of the default and of variant v in m
// into c.k, raising each one's shared memory limit, and makes v's (the
// default's where v is not built for a tile) the kernels prefill runs on
// (c.flash.names); it returns what failed.
func (c *Compute) flashFunctions(m cuda.Module, v flashVariant) []string {
	f := &c.flash
	var errs []string
	for _, k := range flashAllKernels() {
		if k.v.suffix != "" && k.v != v {
			continue
		}
		fk, hd, br := k.flashKey, k.hd, k.br
		name := k.name()
		fn, err := m.Function(name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		smem := flashSharedBytes(hd, br, c.dt.bytes)
		if optin := c.info.SharedPerBlockOptin; optin > 0 && int64(smem) > optin {
			errs = append(errs, fmt.Sprintf("%s needs %d bytes of shared memory, the device allows %d", name, smem, optin))
			continue
		}
		if smem > cuda.DefaultDynamicSharedBytes {
			if err := fn.SetAttribute(cuda.FuncMaxDynamicSharedBytes, smem); err != nil {
				errs = append(errs, err.Error())
				continue
			}
		}
		c.k[name] = kernel{fn: fn, sig: flashKernelSig}
		if k.v == flashVariantFor(fk, f.variant) {
			f.shared[fk], f.names[fk] = smem, name
		}
	}
	return errs
}

// flashFits reports whether some attention op of the rank's Programs has
// a shape the flash kernels take.
func (c *Compute) flashFits() bool {
	for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
		prog := c.plan.Program(c.rank.Rank, ph)
		for i := range prog.Ops {
			op := &prog.Ops[i]
			if op.Kind == partition.Attention && op.QLen >= flashMinQ && slices.Contains(flashHeadDims, op.HeadDim) {
				return true
			}
		}
	}
	return false
}

// compileSource is compile for a source other than kernelSource, cached
// under its name beside it.
func (c *Compute) compileSource(src, name string, major, minor int, cubin bool) (compiledImage, error) {
	return c.compileSourceWith(src, name, major, minor, cubin)
}

// compileSourceWith is compileSource with more NVRTC options (defines),
// part of the cache's key.
func (c *Compute) compileSourceWith(src, name string, major, minor int, cubin bool, opts ...string) (compiledImage, error) {
	arch := cuda.ArchOption(major, minor, cubin)
	key := name + " " + c.dt.name + " " + arch + " " + c.rtc.Path() + " " + strings.Join(opts, " ")
	images.Lock()
	defer images.Unlock()
	if img, ok := images.m[key]; ok {
		return img, nil
	}
	out, err := c.rtc.Compile(src, name, append([]string{arch, c.dt.define}, opts...)...)
	if err != nil {
		return compiledImage{}, err
	}
	what := fmt.Sprintf("ptx compute_%d%d", major, minor)
	if out.CUBIN {
		what = fmt.Sprintf("cubin sm_%d%d", major, minor)
	}
	img := compiledImage{image: out.Image, what: what}
	images.m[key] = img
	return img, nil
}

// flashKeys are every (head dim, query tile) flash.cu is built for.
func flashKeys() []flashKey {
	var ks []flashKey
	for _, hd := range flashHeadDims {
		for _, br := range flashBrs {
			ks = append(ks, flashKey{hd, br})
		}
	}
	return ks
}

// flashTile is the query tile for a prefill of q queries per sequence,
// seqs sequences and hl heads on sms SMs: 128 (K and V tiles shared by
// twice the queries) where q fills such tiles and they still make at
// least one block per SM; else 64.
func flashTile(q, seqs, hl, sms int) int {
	if q >= 128 && seqs*((q+127)/128)*hl >= sms {
		return 128
	}
	return flashBr
}

// attentionKernel is the kernel that runs op (an attention op): the
// tensor-core pb_flash_fwd_dD[_b128] (the selected variant's entry,
// flash_variants.go) for a prefill of at least flashMinQ
// queries per sequence with a head dim it is built for (query tile by
// flashTile), else pb_attention_vV.
func (c *Compute) attentionKernel(op *partition.Op) string {
	if c.flash.loaded && op.QLen >= flashMinQ {
		br := flashTile(op.QLen, op.Seqs, op.Heads, c.info.SMs)
		if name, ok := c.flash.names[flashKey{op.HeadDim, br}]; ok {
			return name
		}
		if name, ok := c.flash.names[flashKey{op.HeadDim, flashBr}]; ok {
			return name
		}
	}
	return c.attnName
}

// flashKeyOf is the head dim and query tile of a flash kernel's name
// (any variant's).
func flashKeyOf(name string) (flashKey, bool) {
	k, ok := flashKernelOf(name)
	return k.flashKey, ok
}

// flashKernelOf is the shape and variant of a flash kernel's name.
func flashKernelOf(name string) (flashKernel, bool) {
	k, ok := flashKernelsByName()[name]
	return k, ok
}

// flashKernelsByName is every flash entry point by its name, made once:
// every attention op asks (a decode step's too, whose kernel is not
// one), and naming each entry point per op took half of a serving
// engine's host time per iteration.
var flashKernelsByName = sync.OnceValue(func() map[string]flashKernel {
	m := map[string]flashKernel{}
	for _, k := range flashAllKernels() {
		m[k.name()] = k
	}
	return m
})

// opTag is what the op's timing entry adds to its name to say which
// kernel ran it: " [flash d128 b64]" where attention runs on
// pb_flash_fwd_d128 (64-query tiles),
// " [split-kv S=8]" where decode attention is split 8 ways; " [cublas]"
// where prefill attention runs as cuBLAS GEMMs around pb_causal_softmax
// (attnblas.go);
// " [+L01.attn_norm]" on a residual that runs the norm after it and
// " [in L00.mlp_residual]" on that norm (fuse.go); nothing for the other
// kernels, whose names stay as the Program has them.
func (c *Compute) opTag(op *partition.Op) string {
	if op.Kind != partition.Attention {
		if t := c.gemvTag(op); t != "" { // gemv.go
			return t
		}
		return c.fuseTag(op) // fuse.go
	}
	if fk, ok := flashKernelOf(c.attentionKernel(op)); ok {
		if fk.v.suffix != "" {
			return fmt.Sprintf(" [flash d%d b%d %s]", fk.hd, fk.br, fk.v.name)
		}
		return fmt.Sprintf(" [flash d%d b%d]", fk.hd, fk.br)
	}
	if s := c.splits(op); s > 1 {
		return fmt.Sprintf(" [split-kv S=%d]", s)
	}
	if c.usesBlasAttn(op) {
		return " [cublas]"
	}
	return ""
}

// OpLabel is opTag for traces (exec.OpLabeler).
func (c *Compute) OpLabel(op *partition.Op) string { return c.opTag(op) }

var _ pexec.OpLabeler = (*Compute)(nil)

// flashAttention launches pb_flash_fwd_dD for op when attentionKernel
// picks it (after pb_rope_kv has rotated q and k and appended k and v to
// the cache), and reports whether it did.
func (c *Compute) flashAttention(op *partition.Op, qkv, ao dbuf, cache *dkv, st *mbState, seq0 int) (bool, error) {
	name := c.attentionKernel(op)
	fk, ok := flashKernelOf(name)
	if !ok {
		return false, nil
	}
	return true, c.launchFlashKernel(name, fk, op, qkv, ao, cache, st, seq0)
}

// launchFlash launches flash kernel name (any variant) for op.
func (c *Compute) launchFlash(name string, op *partition.Op, qkv, ao dbuf, cache *dkv, st *mbState, seq0 int) error {
	fk, ok := flashKernelOf(name)
	if !ok {
		return fmt.Errorf("cuda: %s is not a flash kernel", name)
	}
	return c.launchFlashKernel(name, fk, op, qkv, ao, cache, st, seq0)
}

// launchFlashKernel launches fk, named name, for op: one name lookup per
// attention op (flashAttention has already made it).
func (c *Compute) launchFlashKernel(name string, fk flashKernel, op *partition.Op, qkv, ao dbuf, cache *dkv, st *mbState, seq0 int) error {
	hd := op.HeadDim
	scaleLog2 := float32(1 / math.Sqrt(float64(hd)) * math.Log2E)
	bidir := 0
	if op.Bidirectional {
		bidir = 1
	}
	a := c.newArgs().p(qkv.p).p(ao.p).p(cache.k).p(cache.v).p(st.pos).i(seq0).i(op.QLen).i(op.Heads).i(op.KVHeads).i(c.frame.Context).f(scaleLog2).i(bidir)
	tiles := (op.QLen + fk.br - 1) / fk.br
	return c.launchShared(name, cuda.D2(op.Seqs*tiles, op.Heads), cuda.D1(fk.threads()), flashSharedBytes(hd, fk.br, c.dt.bytes), a)
}

// launchShared launches a kernel of flash.cu or the second module with
// dynamic shared memory: launch's checks, and the kernel's bound in
// extraLaunch.
func (c *Compute) launchShared(name string, grid, block cuda.Dim3, shared int, a *args) error {
	if c.replay {
		return nil
	}
	k, ok := c.k[name]
	if !ok {
		return fmt.Errorf("cuda: kernel %s is not loaded", name)
	}
	if err := k.check(a); err != nil {
		return err
	}
	if err := checkExtraLaunch(name, int(block.X*block.Y*block.Z), shared); err != nil {
		return err
	}
	c.stats.Launches++
	return k.fn.Launch(grid, block, shared, c.stream, a.vals[:a.n]...)
}

// describeExtra is Describe's account of the additions: the tensor-core
// attention, the second module and where the weights were generated.
func (c *Compute) describeExtra() string {
	flash := "flash attention off (" + c.flash.why + ")"
	if c.flash.loaded && len(c.flash.names) > 0 {
		flash = "flash attention " + c.flash.image
		if c.flash.variant.suffix != "" {
			flash += " variant " + c.flash.variant.name
		}
	}
	extra := "split-KV/fused off (" + c.extra.why + ")"
	if c.extra.loaded {
		extra = "split-KV/fused " + c.extra.image
	}
	return fmt.Sprintf(", %s, %s, weights %s, %s", flash, extra, c.weightSource, c.describeGemv())
}

// FlashAttention says whether prefill attention runs on the tensor-core
// kernels (flash.cu) and, when not, why.
func (c *Compute) FlashAttention() (image string, ok bool, why string) {
	return c.flash.image, c.flash.loaded && len(c.flash.names) > 0, c.flash.why
}
