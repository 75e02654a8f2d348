package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/cuda/hostemu"
	kernelsrc "github.com/partbench/partbench/exec/cuda/kernels"
)

// The residual add + norm that fuse.go launches in place of two ops must
// leave what the two ops leave: pb_add then pb_rmsnorm (or pb_layernorm)
// from the first module against pb_add_rmsnorm (pb_add_layernorm) from
// fused.cu, on the same inputs, in one program. The fused kernels store
// the sum rounded before reading it back, square and sum in the same order
// and reduce over the block with the same block_sum, so x
// and the norm's output are equal bit for bit in every element type; any
// difference is a defect of the fusion.

// fuseEmuKernels are the unfused and fused kernels with their signatures.
var fuseEmuKernels = []hostemu.Kernel{
	{Name: "pb_add", Sig: kernelSigs["pb_add"]}, {Name: "pb_rmsnorm", Sig: kernelSigs["pb_rmsnorm"]},
	{Name: "pb_layernorm", Sig: kernelSigs["pb_layernorm"]},
	{Name: "pb_add_rmsnorm", Sig: addRMSNormSig}, {Name: "pb_add_layernorm", Sig: addLayerNormSig},
}

// fuseEmuSource is norm.cu, elementwise.cu and fused (fused.cu's text, or
// a planted bug's) in one translation unit, the shared header once.
func fuseEmuSource(t *testing.T, fused string) string {
	t.Helper()
	var text string
	for _, f := range []string{"norm.cu", "elementwise.cu"} {
		s, err := kernelsrc.Raw(f)
		if err != nil {
			t.Fatal(err)
		}
		text += s + "\n"
	}
	src, err := kernelsrc.Expand("fuse-check.cu", text+fused)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// fusedAgainstUnfused runs both paths over rows of width H (H = 96: fewer
// vectors than threads; H = 1000: a multiple of the 16-byte vector,
// several per thread, not a multiple of the block; H = 1001: one element
// at a time) for RMSNorm and LayerNorm, and describes each difference.
func fusedAgainstUnfused(p hostemu.Runner, dt dtype) ([]string, error) {
	rng := rand.New(rand.NewPCG(11, uint64(dt.bytes)))
	vals := func(n int, lo, hi float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = dt.round(lo + (hi-lo)*rng.Float32())
		}
		return v
	}
	run := func(bufs [][]byte, ls ...hostemu.Launch) ([][]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return p.Run(ctx, bufs, ls)
	}
	var diffs []string
	for _, H := range []int{96, 1000, 1001} {
		const rows = 3
		x, y, w, b := vals(rows*H, -3, 3), vals(rows*H, -3, 3), vals(H, 0.5, 1.5), vals(H, -0.5, 0.5)
		const eps = 1e-5
		for _, layer := range []bool{false, true} {
			bufs := func() [][]byte {
				return [][]byte{dt.encode(x), dt.encode(y), make([]byte, rows*H*dt.bytes), dt.encode(w), dt.encode(b)}
			}
			norm, fused := "pb_rmsnorm", "pb_add_rmsnorm"
			normArgs := []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0)}
			fusedArgs := []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0)}
			if layer {
				norm, fused = "pb_layernorm", "pb_add_layernorm"
				normArgs = append(normArgs, hostemu.Ptr(4, 0))
				fusedArgs = append(fusedArgs, hostemu.Ptr(4, 0))
			}
			normArgs = append(normArgs, hostemu.I32(1), hostemu.I32(H), hostemu.F32(eps)) // stride 1: every row
			fusedArgs = append(fusedArgs, hostemu.I32(H), hostemu.F32(eps))
			two, err := run(bufs(),
				hostemu.Launch{Kernel: "pb_add", Grid: hostemu.D1(flatBlocks(rows * H)), Block: hostemu.D1(flatThreads),
					Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(rows * H)}},
				hostemu.Launch{Kernel: norm, Grid: hostemu.D1(rows), Block: hostemu.D1(rowThreads), Args: normArgs})
			if err != nil {
				return nil, err
			}
			one, err := run(bufs(), hostemu.Launch{Kernel: fused, Grid: hostemu.D1(rows), Block: hostemu.D1(rowThreads), Args: fusedArgs})
			if err != nil {
				return nil, err
			}
			for _, o := range []struct {
				what string
				buf  int
			}{{"x", 0}, {"norm output", 2}} {
				u, f := dt.decode(two[o.buf]), dt.decode(one[o.buf])
				n, worst := 0, 0.0
				for i := range u {
					if math.Float32bits(u[i]) != math.Float32bits(f[i]) {
						n++
						worst = max(worst, math.Abs(float64(u[i])-float64(f[i])))
					}
				}
				if n > 0 {
					diffs = append(diffs, fmt.Sprintf("%s %s H %d: %d of %d elements of %s differ from pb_add + %s (max |Δ| %.3g)",
						dt.name, fused, H, n, len(u), o.what, norm, worst))
				}
			}
		}
	}
	return diffs, nil
}

func TestFusedNormMatchesUnfusedEmulated(t *testing.T) {
	src := fuseEmuSource(t, fusedSource)
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		p := buildKernelEmu(t, "fuse-check.cu", src, dt, fuseEmuKernels)
		diffs, err := fusedAgainstUnfused(p, dt)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			t.Error(d)
		}
	}
}

// Planted bugs a fusion invites, each of which the comparison must catch
// (fp16, where rounding the sum matters as well): the norm over x before
// the add, the norm over the unrounded sum, LayerNorm's variance without
// the mean (in the vector path and the one-element path).
func TestFusedNormEmulatedPlantedBugs(t *testing.T) {
	dt := dtypes["fp16"]
	for _, bug := range []struct{ name, old, new string }{
		// The vector path (H = 96, 1000).
		{"norm of the pre-add x", "\t\t\t\tconst float v = ld(s);", "\t\t\t\tconst float v = ld(xv.e[e]) - ld(yv.e[e]);"},
		{"unrounded sum", "const elem s = st(ld(xv.e[e]) + ld(yv.e[e]));\n\t\t\t\txv.e[e] = s;\n\t\t\t\tconst float v = ld(s);",
			"const float v = ld(xv.e[e]) + ld(yv.e[e]);\n\t\t\t\txv.e[e] = st(v);"},
		{"variance without the mean", "const float d = ld(xv.e[e]) - mean;", "const float d = ld(xv.e[e]);"},
		// The one-element path (H = 1001).
		{"variance without the mean, one element at a time", "const float d = ld(xr[c]) - mean;", "const float d = ld(xr[c]);"},
	} {
		p := buildKernelEmu(t, "fuse-check.cu", fuseEmuSource(t, plantBug(t, fusedSource, bug.old, bug.new)), dt, fuseEmuKernels)
		diffs, err := fusedAgainstUnfused(p, dt)
		if err != nil {
			t.Fatal(err)
		}
		if len(diffs) == 0 {
			t.Errorf("planted bug %q passes", bug.name)
		}
	}
}

// The same comparison on a GPU (device 0, both paths compiled by NVRTC).
func TestRealGPUFusedNormMatchesUnfused(t *testing.T) {
	src := fuseEmuSource(t, fusedSource)
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		d, err := hostemu.NewDevice(hostemu.Options{Name: "fuse-check.cu", Source: src, Defines: []string{dt.define}, Kernels: fuseEmuKernels})
		if errors.Is(err, hostemu.ErrUnavailable) {
			t.Skipf("%v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		diffs, err := fusedAgainstUnfused(d, dt)
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			t.Error(d)
		}
	}
}
