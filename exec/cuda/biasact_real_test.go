package cuda

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// The three ways a GEMM's bias reaches its output, on a GPU, on one layer
// of two GPT-2-architecture models (LayerNorm, biases, tanh GELU):
// GPT-2 XL's layer (hidden 1600, ffn 6400; batch 4, context 512) and a
// seed-sized layer (the seed model's hidden 4096, ffn 16384, heads 32 of
// 128; batch 16, context 2048), in fp32, fp16 and bf16:
//
//	lt:      cuBLASLt with the bias as its epilogue; the up projection with its
//	         GELU too (GELU_BIAS) where New's probe found the tanh form, else pb_act
//	lt-bias: cuBLASLt with the bias as its epilogue, pb_act after the up projection
//	fused:   cublasGemmEx, then pb_bias_act (the up projection) or pb_bias (the down)
//	unfused: cublasGemmEx, then pb_bias, then pb_act
//
// For the prefill and the decode rows it times the up projection with its
// activation and the down projection (CUDA events, 3 warm-up runs, the
// median of 10) and holds sampled rows of each path's outputs to a
// float64 reference computed from the device's own weights and inputs:
// |Δ| / max(1, |want|) within realBiasTol. It also runs the up projection
// through cuBLASLt's GELU_BIAS epilogue and logs which GELU that computes
// (it must be one of tanh's and erf's within the bound), beside what
// New's probe found. It fails when a path fails, a time is missing or an
// output is beyond the bound.
func TestRealGPULtBiasGEMM(t *testing.T) {
	realGPU(t)
	for _, sc := range []struct {
		name                          string
		hidden, heads, hd, ffn, batch int
		context, positions            int
	}{
		{"gpt2-xl layer", 1600, 25, 64, 6400, 4, 512, 1024},
		{"seed-sized layer", 4096, 32, 128, 16384, 16, 2048, 2048},
	} {
		plan := biasPlan(t, sc.hidden, sc.heads, sc.hd, sc.ffn, sc.batch, sc.context, sc.positions)
		for _, dt := range []string{"fp32", "fp16", "bf16"} {
			t.Run(sc.name+"/"+dt, func(t *testing.T) { biasPathsTable(t, plan, dt) })
		}
	}
}

// realBiasTol bounds |got − want| / max(1, |want|) of a GEMM with a bias
// (and GELU) against float64 on the device: fp32 accumulation over up to
// K = 16,384 terms (≈ √K·2⁻²⁴ relative, with room), then the storage
// rounding, twice on the unfused path (≤ 4.7u with GELU's amplification,
// docs/numerics.md), with room: fp16 u = 2⁻¹¹, bf16 u = 2⁻⁸.
var realBiasTol = map[string]float64{"fp32": 1e-4, "fp16": 5e-3, "bf16": 4e-2}

// biasPlan is one GPT-2-architecture layer of the given shape, one GPU.
func biasPlan(t *testing.T, hidden, heads, hd, ffn, batch, context, positions int) *partition.Plan {
	t.Helper()
	return oneGPUPlan(t, "bias-paths", fmt.Sprintf(`[model]
preset = "gpt2-xl"
layers = 1
hidden = %d
heads = %d
kv_heads = %d
head_dim = %d
ffn = %d
max_positions = %d
[workload]
batch = %d
context = %d
output_tokens = 4
[parallel]
tp = 1
pp = 1
microbatches = 1
`, hidden, heads, heads, hd, ffn, positions, batch, context))
}

// biasOps are layer 0's up projection, activation and down projection of
// a phase.
type biasOps struct{ up, act, down *partition.Op }

func biasOpsOf(t *testing.T, plan *partition.Plan, phase partition.Phase) biasOps {
	t.Helper()
	prog := plan.Program(0, phase)
	get := func(name string) *partition.Op {
		i := slices.IndexFunc(prog.Ops, func(op partition.Op) bool { return op.Name == name })
		if i < 0 {
			t.Fatalf("%s has no op %s", phase, name)
		}
		return &prog.Ops[i]
	}
	return biasOps{get("L00.w_up"), get("L00.act"), get("L00.w_down")}
}

// biasSampleRows are the rows of r compared with float64: first, second,
// middle, last.
func biasSampleRows(r int) []int { return slices.Compact([]int{0, min(1, r-1), r / 2, r - 1}) }

// biasPath is one path's outputs on the sampled rows and its times (ms).
type biasPath struct {
	name                    string
	a, y                    map[partition.Phase][][]float32 // activation and down-projection rows
	upMS, downMS            map[partition.Phase]float64
	errA, errY              float64 // against float64
	geluTanhErr, geluErfErr float64 // the GELU_BIAS epilogue's (lt only)
	geluProbed              bool
}

func biasPathsTable(t *testing.T, plan *partition.Plan, dt string) {
	tol := realBiasTol[dt]
	phases := []partition.Phase{partition.Prefill, partition.Decode}
	var paths []*biasPath
	var ref *biasRef
	for _, p := range []struct{ name, without string }{{"lt", ""}, {"lt-bias", "cublaslt-gelu"}, {"fused", "cublaslt"}, {"unfused", "cublaslt,bias-act"}} {
		bp := &biasPath{name: p.name, a: map[partition.Phase][][]float32{}, y: map[partition.Phase][][]float32{},
			upMS: map[partition.Phase]float64{}, downMS: map[partition.Phase]float64{}}
		c, err := New(plan, 0, Options{DType: dt, NoTiming: true, Without: p.without})
		if err != nil {
			t.Fatal(err)
		}
		if p.name == "lt" {
			t.Logf("%s: New's probe of the GELU_BIAS epilogue: %q (%s)", dt, c.lt.gelu, c.lt.geluWhy)
		}
		if strings.HasPrefix(p.name, "lt") && c.lt.handle == nil {
			c.Close()
			t.Logf("%s: no cuBLASLt path: %s", dt, c.lt.why)
			continue
		}
		if ref == nil {
			ref = newBiasRef(t, c, biasOpsOf(t, plan, partition.Prefill))
		}
		for _, ph := range phases {
			ops := biasOpsOf(t, plan, ph)
			biasRunPath(t, c, ops, ref, bp, ph)
			if p.name == "lt" && ph == partition.Prefill {
				biasProbeGELU(t, c, ops, ref, bp)
			}
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		paths = append(paths, bp)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, hidden %d, ffn %d, batch %d, context %d: up = w_up + bias + GELU, down = w_down + bias; ms, median of 10 (CUDA events)\n", dt, plan.Config.Model.Hidden, plan.Config.Model.FFN, plan.Config.Workload.Batch, plan.Config.Workload.Context)
	fmt.Fprintf(&b, "%-8s %12s %12s %12s %12s %11s %11s %11s\n", "path", "up prefill", "up decode", "down prefill", "down decode", "err a", "err y", "|Δa| unf.")
	unf := paths[len(paths)-1]
	for _, p := range paths {
		diff := 0.0
		for _, ph := range phases {
			for i := range p.a[ph] {
				for j := range p.a[ph][i] {
					diff = max(diff, math.Abs(float64(p.a[ph][i][j])-float64(unf.a[ph][i][j])))
				}
			}
		}
		fmt.Fprintf(&b, "%-8s %12.4f %12.4f %12.4f %12.4f %11.3g %11.3g %11.3g\n", p.name,
			p.upMS[partition.Prefill], p.upMS[partition.Decode], p.downMS[partition.Prefill], p.downMS[partition.Decode], p.errA, p.errY, diff)
		if p.errA > tol || p.errY > tol || math.IsNaN(p.errA) || math.IsNaN(p.errY) {
			t.Errorf("%s %s: error against float64 %.3g (a), %.3g (y), beyond %g", dt, p.name, p.errA, p.errY, tol)
		}
		for _, ph := range phases {
			if !(p.upMS[ph] > 0) || !(p.downMS[ph] > 0) {
				t.Errorf("%s %s %s: a time is missing (%g, %g ms)", dt, p.name, ph, p.upMS[ph], p.downMS[ph])
			}
		}
		if p.geluProbed {
			which := "tanh"
			if p.geluErfErr < p.geluTanhErr {
				which = "erf"
			}
			fmt.Fprintf(&b, "cuBLASLt GELU_BIAS epilogue (prefill): error %.3g against tanh-GELU, %.3g against erf-GELU: it computes the %s form\n",
				p.geluTanhErr, p.geluErfErr, which)
			if min(p.geluTanhErr, p.geluErfErr) > tol {
				t.Errorf("%s: cuBLASLt's GELU_BIAS matches neither tanh-GELU (%.3g) nor erf-GELU (%.3g) within %g", dt, p.geluTanhErr, p.geluErfErr, tol)
			}
		}
	}
	t.Log("\n" + b.String())
}

// biasRef is the device's weights of layer 0's MLP, as float32, and the
// input written to h.
type biasRef struct {
	h          []float32 // the prefill rows of h (the decode rows are its first)
	wUp, wDown []float32
	bUp, bDown []float32
	H, F       int
}

// newBiasRef writes nothing; it reads c's weights (every path generates
// the same ones from the seed) and makes the input.
func newBiasRef(t *testing.T, c *Compute, ops biasOps) *biasRef {
	t.Helper()
	r := &biasRef{H: ops.up.K, F: ops.up.N}
	read := func(op *partition.Op, bias bool) []float32 {
		var p cuda.DevicePtr
		n := op.K * op.N
		if bias {
			bt := c.frame.Weights[pexec.TensorKey{Layer: op.Layer, Name: op.Bias}]
			p, n = bt.p, op.N
		} else {
			w, err := c.frame.Weight(op)
			if err != nil {
				t.Fatal(err)
			}
			p = w.p
		}
		raw := make([]byte, n*c.dt.bytes)
		if err := c.downloadInto(raw, p); err != nil {
			t.Fatal(err)
		}
		return c.dt.decode(raw)
	}
	r.wUp, r.bUp, r.wDown, r.bDown = read(ops.up, false), read(ops.up, true), read(ops.down, false), read(ops.down, true)
	r.h = make([]float32, ops.up.Rows*r.H)
	for i := range r.h {
		r.h[i] = c.dt.round(float32((i*7919)%401)/200 - 1)
	}
	return r
}

// gemmRow is x·W + b for one row x of k (W k×n row-major), in float64.
func gemmRow(x, W, b []float32, n int) []float64 {
	out := make([]float64, n)
	for j := range out {
		out[j] = float64(b[j])
	}
	for k, xv := range x {
		row := W[k*n : (k+1)*n]
		for j, w := range row {
			out[j] += float64(xv) * float64(w)
		}
	}
	return out
}

// relErr is max |got − want| / max(1, |want|).
func relErr(got []float32, want []float64) float64 {
	e := 0.0
	for i := range want {
		d := math.Abs(float64(got[i])-want[i]) / math.Max(1, math.Abs(want[i]))
		if math.IsNaN(d) {
			return math.NaN()
		}
		e = max(e, d)
	}
	return e
}

// biasRunPath writes h, times the up projection with its activation and
// the down projection of phase ph on c, keeps the sampled rows of a and y
// and their errors against float64.
func biasRunPath(t *testing.T, c *Compute, ops biasOps, ref *biasRef, bp *biasPath, ph partition.Phase) {
	ctx := context.Background()
	rows := ops.up.Rows
	hBuf, err := c.Buffer(ops.up.In, 0, rows*ref.H)
	if err != nil {
		t.Fatal(err)
	}
	if err := hBuf.(*Buffer).WriteF32(ref.h[:rows*ref.H]); err != nil {
		t.Fatal(err)
	}
	timed := func(what string, run func() error) float64 {
		unpin, err := c.enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer unpin()
		ev := [2]cuda.Event{}
		for i := range ev {
			if ev[i], err = c.drv.NewEvent(cuda.EventDefault); err != nil {
				t.Fatal(err)
			}
			defer ev[i].Destroy()
		}
		var ms []float64
		for r := 0; r < 3+10; r++ {
			if err := ev[0].Record(c.stream); err != nil {
				t.Fatal(err)
			}
			if err := run(); err != nil {
				t.Fatalf("%s %s %s: %v", bp.name, ph, what, err)
			}
			if err := ev[1].Record(c.stream); err != nil {
				t.Fatal(err)
			}
			if err := ev[1].Synchronize(); err != nil {
				t.Fatalf("%s %s %s: %v", bp.name, ph, what, err)
			}
			e, err := cuda.ElapsedMS(ev[0], ev[1])
			if err != nil {
				t.Fatal(err)
			}
			if r >= 3 {
				ms = append(ms, float64(e))
			}
		}
		slices.Sort(ms)
		return stat.Quantile(0.5, stat.Empirical, ms, nil)
	}
	exec := func(ops ...*partition.Op) func() error {
		return func() error {
			for _, op := range ops {
				if err := c.op(op, 0); err != nil {
					return err
				}
			}
			return nil
		}
	}
	bp.upMS[ph] = timed("up", exec(ops.up, ops.act))
	bp.downMS[ph] = timed("down", exec(ops.down))
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	readRow := func(b interface{ Ptr() cuda.DevicePtr }, r, n int) []float32 {
		raw := make([]byte, n*c.dt.bytes)
		if err := c.downloadInto(raw, b.Ptr()+cuda.DevicePtr(r*n*c.dt.bytes)); err != nil {
			t.Fatal(err)
		}
		return c.dt.decode(raw)
	}
	aBuf, err := c.Buffer(ops.act.Out, 0, rows*ref.F)
	if err != nil {
		t.Fatal(err)
	}
	yBuf, err := c.Buffer(ops.down.Out, 0, rows*ref.H)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range biasSampleRows(rows) {
		a := readRow(aBuf.(*Buffer), r, ref.F)
		wantA := gemmRow(ref.h[r*ref.H:(r+1)*ref.H], ref.wUp, ref.bUp, ref.F)
		for j := range wantA {
			wantA[j] = geluTanh64(wantA[j])
		}
		y := readRow(yBuf.(*Buffer), r, ref.H)
		wantY := gemmRow(a, ref.wDown, ref.bDown, ref.H) // from the device's own a
		bp.errA, bp.errY = max(bp.errA, relErr(a, wantA)), max(bp.errY, relErr(y, wantY))
		bp.a[ph], bp.y[ph] = append(bp.a[ph], a), append(bp.y[ph], y)
	}
}

// biasProbeGELU runs the up projection through cuBLASLt's GELU_BIAS
// epilogue into a and measures it against tanh-GELU and erf-GELU.
func biasProbeGELU(t *testing.T, c *Compute, ops biasOps, ref *biasRef, bp *biasPath) {
	ctx := context.Background()
	rows := ops.up.Rows
	hBuf, _ := c.Buffer(ops.up.In, 0, rows*ref.H)
	aBuf, err := c.Buffer(ops.act.Out, 0, rows*ref.F)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.frame.Weight(ops.up)
	if err != nil {
		t.Fatal(err)
	}
	bias := c.frame.Weights[pexec.TensorKey{Layer: ops.up.Layer, Name: ops.up.Bias}]
	unpin, err := c.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := cuda.RowMajorGemm(rows, ref.F, ref.H, hBuf.(*Buffer).ptr, w.p, aBuf.(*Buffer).ptr, c.dt.blas)
	p, err := c.lt.handle.Plan(cuda.LtFromGemm(g, cuda.LtEpilogueGELUBias, bias.p), c.ltWorkspace())
	if err != nil {
		unpin()
		t.Logf("cuBLASLt GELU_BIAS: %v", err)
		return
	}
	defer p.Destroy()
	err = p.Run(c.blasWS, c.ltWorkspace(), c.stream)
	if err == nil {
		err = c.stream.Synchronize()
	}
	unpin()
	if err != nil {
		t.Fatal(err)
	}
	bp.geluProbed = true
	for _, r := range biasSampleRows(rows) {
		raw := make([]byte, ref.F*c.dt.bytes)
		if err := c.downloadInto(raw, aBuf.(*Buffer).ptr+cuda.DevicePtr(r*ref.F*c.dt.bytes)); err != nil {
			t.Fatal(err)
		}
		got := c.dt.decode(raw)
		pre := gemmRow(ref.h[r*ref.H:(r+1)*ref.H], ref.wUp, ref.bUp, ref.F)
		tanhW, erfW := make([]float64, len(pre)), make([]float64, len(pre))
		for j, x := range pre {
			tanhW[j] = geluTanh64(x)
			erfW[j] = 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
		}
		bp.geluTanhErr = max(bp.geluTanhErr, relErr(got, tanhW))
		bp.geluErfErr = max(bp.geluErfErr, relErr(got, erfW))
	}
}
