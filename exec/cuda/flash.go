package cuda

import (
	_ "embed" // flash.cu
	"fmt"
	"math"
	"strings"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/partition"
)

// flashSource is the tensor-core prefill attention (flash.cu), compiled as
// a module of its own beside kernelSource: for fp16 and bf16 only (the
// m16n8k16 mma has no fp32 form), and only for sm_80 and newer (mma.sync
// m16n8k16, ldmatrix and cp.async).
//
//go:embed flash.cu
var flashSource string

// Launch shape of pb_flash_fwd_dD: 4 warps, 64 queries per block, key
// tiles of 64 (FLASH_THREADS, FLASH_BR, FLASH_BC in flash.cu).
const (
	flashThreads = 128
	flashBr      = 64
	flashBc      = 64
)

// flashKernelSig is the parameter list of every pb_flash_fwd_dD, in
// launch.go's letters: qkv, ao, kc, vc, pos, seq0, q, hl, kvl, context,
// scale_log2, bidir.
const flashKernelSig = "pppppiiiiifi"

// flashHeadDims are the head dims flash.cu is instantiated for.
var flashHeadDims = []int{64, 128}

// flashKernelName is the kernel for head dim hd.
func flashKernelName(hd int) string { return fmt.Sprintf("pb_flash_fwd_d%d", hd) }

// flashSharedBytes is the dynamic shared memory of pb_flash_fwd_dD: Q one
// 64-row tile, K and V two each (double buffering), rows of hd+8
// elements (the pad spreads ldmatrix's rows over the banks).
func flashSharedBytes(hd, elemBytes int) int { return (flashBr + 4*flashBc) * (hd + 8) * elemBytes }

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
	image  string         // "cubin sm_90" or "ptx compute_90"
	shared map[int]int    // dynamic shared memory per head dim, set on each function
	why    string         // why flash.cu is not used, when !loaded
	names  map[int]string // kernel per head dim (flashKernelName)
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
	}
	var errs []string
	for _, cubin := range []bool{true, false} {
		if cubin && !c.rtc.HasCUBIN() {
			continue
		}
		img, err := c.compileSource(flashSource, "flash.cu", major, minor, cubin)
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
	f.shared, f.names = map[int]int{}, map[int]string{}
	for _, hd := range flashHeadDims {
		name := flashKernelName(hd)
		fn, err := f.module.Function(name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		smem := flashSharedBytes(hd, c.dt.bytes)
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
		f.shared[hd], f.names[hd] = smem, name
	}
	if len(f.names) == 0 {
		f.why = strings.Join(errs, "; ")
	}
}

// compileSource is compile for a source other than kernelSource, cached
// under its name beside it.
func (c *Compute) compileSource(src, name string, major, minor int, cubin bool) (compiledImage, error) {
	arch := cuda.ArchOption(major, minor, cubin)
	key := name + " " + c.dt.name + " " + arch + " " + c.rtc.Path()
	images.Lock()
	defer images.Unlock()
	if img, ok := images.m[key]; ok {
		return img, nil
	}
	out, err := c.rtc.Compile(src, name, arch, c.dt.define)
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

// attentionKernel is the kernel that runs op (an attention op): the
// tensor-core pb_flash_fwd_dD for a prefill of at least flashMinQ queries
// per sequence with a head dim it is built for, else pb_attention_vV.
func (c *Compute) attentionKernel(op *partition.Op) string {
	if name, ok := c.flash.names[op.HeadDim]; ok && c.flash.loaded && op.QLen >= flashMinQ {
		return name
	}
	return fmt.Sprintf("pb_attention_v%d", c.attnV)
}

// opTag is what the op's timing entry adds to its name to say which
// kernel ran it: " [flash d128]" where attention runs on pb_flash_fwd_d128,
// " [split-kv S=8]" where decode attention is split 8 ways; nothing for
// the other kernels, whose names stay as the Program has them.
func (c *Compute) opTag(op *partition.Op) string {
	if op.Kind != partition.Attention {
		return ""
	}
	if k := c.attentionKernel(op); strings.HasPrefix(k, "pb_flash_fwd_d") {
		return " [flash d" + strings.TrimPrefix(k, "pb_flash_fwd_d") + "]"
	}
	if s := c.splits(op); s > 1 {
		return fmt.Sprintf(" [split-kv S=%d]", s)
	}
	return ""
}

// flashAttention launches pb_flash_fwd_dD for op when attentionKernel
// picks it (after pb_rope_kv has rotated q and k and appended k and v to
// the cache), and reports whether it did.
func (c *Compute) flashAttention(op *partition.Op, qkv, ao dbuf, cache *dkv, st *mbState, seq0 int) (bool, error) {
	name := c.attentionKernel(op)
	if !strings.HasPrefix(name, "pb_flash_fwd_d") {
		return false, nil
	}
	hd := op.HeadDim
	scaleLog2 := float32(1 / math.Sqrt(float64(hd)) * math.Log2E)
	bidir := 0
	if op.Bidirectional {
		bidir = 1
	}
	a := c.newArgs().p(qkv.p).p(ao.p).p(cache.k).p(cache.v).p(st.pos).i(seq0).i(op.QLen).i(op.Heads).i(op.KVHeads).i(c.frame.Context).f(scaleLog2).i(bidir)
	tiles := (op.QLen + flashBr - 1) / flashBr
	return true, c.launchShared(name, cuda.D2(op.Seqs*tiles, op.Heads), cuda.D1(flashThreads), c.flash.shared[hd], a)
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
	}
	extra := "split-KV/fused off (" + c.extra.why + ")"
	if c.extra.loaded {
		extra = "split-KV/fused " + c.extra.image
	}
	return fmt.Sprintf(", %s, %s, weights %s", flash, extra, c.weightSource)
}

// FlashAttention says whether prefill attention runs on the tensor-core
// kernels (flash.cu) and, when not, why.
func (c *Compute) FlashAttention() (image string, ok bool, why string) {
	return c.flash.image, c.flash.loaded && len(c.flash.names) > 0, c.flash.why
}
