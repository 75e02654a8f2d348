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

// pb_bias_act (biasact.cu) against float64, and against the pair it
// replaces (pb_bias then pb_act from elementwise.cu) on the same inputs,
// in one program of the host-emulation harness.
//
// The fused kernel rounds once: its output is gelu_tanh(u + b) evaluated
// in fp32 and rounded to the storage type, so it lies within one unit in
// the last place of the float64 value (2u·|want|, u the unit roundoff),
// with 1e-6 absolute beside it for outputs near 0, where fp32's tanhf and
// the cancellation in 1 + tanh leave a few fp32 ulps of the terms. The
// pair rounds u + b to the storage type first, so it carries that rounding
// through GELU as well (up to |gelu'(x)·x/gelu(x)|·u more, about 3.7u at
// x = −2): it is held to the element type's kernel tolerance (emuTol)
// only. In fp32 rounding u + b changes nothing and both run the same
// expression, so the two must agree bit for bit.

// biasActEmuKernels are the fused kernel and the pair it replaces.
var biasActEmuKernels = []hostemu.Kernel{
	{Name: "pb_bias_act", Sig: biasActSig},
	{Name: "pb_bias", Sig: kernelSigs["pb_bias"]}, {Name: "pb_act", Sig: kernelSigs["pb_act"]},
}

// biasActEmuSource is elementwise.cu and fused (biasact.cu's text, or a
// planted bug's) in one translation unit, the shared header once.
func biasActEmuSource(t *testing.T, fused string) string {
	t.Helper()
	text, err := kernelsrc.Raw("elementwise.cu")
	if err != nil {
		t.Fatal(err)
	}
	src, err := kernelsrc.Expand("bias-act-check.cu", text+"\n"+fused)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// geluTanh64 is the tanh-approximated GELU in float64.
func geluTanh64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// biasActResult is one shape's comparison.
type biasActResult struct {
	n                     int
	fusedBad              int     // elements of the fused kernel beyond one ulp of float64
	fusedWorst, pairWorst float64 // max |Δ| / max(1, |want|) against float64
	differ                int     // elements where the fused kernel and the pair differ
	elems                 int
}

// biasActAgainstReference runs pb_bias_act and pb_bias + pb_act over rows
// of n = 37 (one element at a time: not a multiple of the 16-byte vector)
// and n = 256 (16-byte vectors, several per thread in a row), u in [−5, 5)
// (GELU's curved part and both tails) and the bias in [−1, 1).
func biasActAgainstReference(p hostemu.Runner, dt dtype, u float64) ([]biasActResult, error) {
	rng := rand.New(rand.NewPCG(25, uint64(dt.bytes)))
	vals := func(k int, a float64) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = dt.round(float32((rng.Float64()*2 - 1) * a))
		}
		return v
	}
	var out []biasActResult
	for _, n := range []int{37, 256} {
		const rows = 6
		x, b := vals(rows*n, 5), vals(n, 1)
		grid, block := hostemu.D1(flatBlocks(rows*n)), hostemu.D1(flatThreads)
		fusedBufs, err := runKflashEmuCtx(p, [][]byte{dt.encode(x), dt.encode(b), make([]byte, rows*n*dt.bytes)},
			hostemu.Launch{Kernel: "pb_bias_act", Grid: grid, Block: block,
				Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.I32(rows), hostemu.I32(n)}})
		if err != nil {
			return nil, err
		}
		pairBufs, err := runKflashEmuCtx(p, [][]byte{dt.encode(x), dt.encode(b), make([]byte, rows*n*dt.bytes)},
			hostemu.Launch{Kernel: "pb_bias", Grid: grid, Block: block,
				Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(rows), hostemu.I32(n)}},
			hostemu.Launch{Kernel: "pb_act", Grid: grid, Block: block,
				Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(2, 0), hostemu.I32(rows), hostemu.I32(n), hostemu.I32(0)}})
		if err != nil {
			return nil, err
		}
		fused, pair := dt.decode(fusedBufs[2]), dt.decode(pairBufs[2])
		want := make([]float64, rows*n)
		for k := range want {
			want[k] = geluTanh64(float64(x[k]) + float64(b[k%n]))
		}
		r := biasActResult{n: n, elems: len(want)}
		r.fusedWorst, _ = maxErr(fused, want)
		r.pairWorst, _ = maxErr(pair, want)
		for k := range want {
			d := math.Abs(float64(fused[k]) - want[k])
			if math.IsNaN(d) || d > 2*u*math.Abs(want[k])+1e-6 {
				r.fusedBad++
			}
			if math.Float32bits(fused[k]) != math.Float32bits(pair[k]) {
				r.differ++
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// runKflashEmuCtx runs launches with the harness's usual deadline.
func runKflashEmuCtx(p hostemu.Runner, bufs [][]byte, ls ...hostemu.Launch) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return p.Run(ctx, bufs, ls)
}

// checkBiasAct fails t where rs break the bounds above.
func checkBiasAct(t *testing.T, dt dtype, rs []biasActResult) {
	t.Helper()
	for _, r := range rs {
		t.Logf("%s n %d: pb_bias_act max error %.3g, pb_bias + pb_act %.3g (tolerance %g); %d of %d elements differ",
			dt.name, r.n, r.fusedWorst, r.pairWorst, emuTol[dt.name], r.differ, r.elems)
		if r.fusedBad > 0 {
			t.Errorf("%s n %d: %d of %d elements of pb_bias_act beyond one ulp of float64", dt.name, r.n, r.fusedBad, r.elems)
		}
		if r.pairWorst > emuTol[dt.name] {
			t.Errorf("%s n %d: pb_bias + pb_act error %.3g beyond %g", dt.name, r.n, r.pairWorst, emuTol[dt.name])
		}
		if dt.name == "fp32" && r.differ > 0 {
			t.Errorf("fp32 n %d: %d elements of pb_bias_act differ from pb_bias + pb_act (want bit for bit)", r.n, r.differ)
		}
	}
}

func TestBiasActMatchesReferenceEmulated(t *testing.T) {
	src := biasActEmuSource(t, biasActSource)
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		p := buildKernelEmu(t, "bias-act-check.cu", src, dt, biasActEmuKernels)
		rs, err := biasActAgainstReference(p, dt, st.u)
		if err != nil {
			t.Fatal(err)
		}
		checkBiasAct(t, dt, rs)
	}
}

// Planted bugs the fused kernel invites, each of which the one-ulp bound
// must catch in fp16: the bias indexed by row (one-element path) or
// dropped to its first vector (vector path), u + b rounded to the storage
// type before GELU (the pair's numerics), and erf's GELU in place of the
// tanh approximation.
func TestBiasActEmulatedPlantedBugs(t *testing.T) {
	dt := dtypes["fp16"]
	for _, bug := range []struct{ name, old, new string }{
		{"bias by row", "ld(bias[k % n])", "ld(bias[(k / n) % n])"},
		{"first bias vector only", "pb_fetch<BIAS_ACT_VEC>(bias + c, b);", "pb_fetch<BIAS_ACT_VEC>(bias, b);"},
		{"u + b rounded before GELU", "st(pb_gelu_tanh(ld(x.e[e]) + ld(b.e[e])))", "st(pb_gelu_tanh(ld(st(ld(x.e[e]) + ld(b.e[e])))))"},
		{"erf GELU", "return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g)));",
			"return 0.5f * g * (1.0f + erff(g * 0.7071067811865476f));"},
	} {
		p := buildKernelEmu(t, "bias-act-check.cu", biasActEmuSource(t, plantBug(t, biasActSource, bug.old, bug.new)), dt, biasActEmuKernels)
		rs, err := biasActAgainstReference(p, dt, 0x1p-11)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, r := range rs {
			bad += r.fusedBad
		}
		if bad == 0 {
			t.Errorf("planted bug %q passes", bug.name)
		}
	}
}

// The same comparison on a GPU (device 0, both paths compiled by NVRTC):
// the bounds hold for the device's tanhf as for the host's.
func TestRealGPUBiasActMatchesReference(t *testing.T) {
	src := biasActEmuSource(t, biasActSource)
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		d, err := hostemu.NewDevice(hostemu.Options{Name: "bias-act-check.cu", Source: src, Defines: []string{dt.define}, Kernels: biasActEmuKernels})
		if errors.Is(err, hostemu.ErrUnavailable) {
			t.Skipf("%v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		rs, err := biasActAgainstReference(d, dt, st.u)
		d.Close()
		if err != nil {
			t.Fatal(fmt.Errorf("%s: %w", dt.name, err))
		}
		checkBiasAct(t, dt, rs)
	}
}
