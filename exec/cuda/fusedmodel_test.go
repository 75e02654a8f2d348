package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
)

// cpuOps makes exec/cpu's rank 0 of config name (1 layer) and returns it
// with its prefill Program.
func cpuOps(t *testing.T, name string, edit func(*configs.Config)) (*cpu.Compute, partition.Program) {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.Layers = 1
	if edit != nil {
		edit(cfg)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, plan.Program(0, partition.Prefill)
}

func opNamed(t *testing.T, prog partition.Program, name string) *partition.Op {
	t.Helper()
	for i := range prog.Ops {
		if prog.Ops[i].Name == name {
			return &prog.Ops[i]
		}
	}
	t.Fatalf("no op %s in the program", name)
	return nil
}

func fill(t *testing.T, c *cpu.Compute, op *partition.Op, in bool, rng *rand.Rand) []float32 {
	t.Helper()
	b, n := op.Out, op.Rows*op.OutWidth
	if in {
		b, n = op.In, op.Rows*op.InWidth
	}
	buf, err := c.Buffer(b, op.Microbatch, n)
	if err != nil {
		t.Fatal(err)
	}
	v := buf.(pexec.F32)
	for i := range v {
		v[i] = 4*rng.Float32() - 2
	}
	return append([]float32(nil), v...)
}

func read(t *testing.T, c *cpu.Compute, op *partition.Op) []float32 {
	t.Helper()
	buf, err := c.Buffer(op.Out, op.Microbatch, op.Rows*op.OutWidth)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), buf.(pexec.F32)...)
}

// TestRopeTableMatchesCPU: rotating q and k with the fp32 table gives, bit
// for bit, what exec/cpu's attention op leaves in qkv (it rotates in
// place with the angle computed per element in float64): the table holds
// the same float32(cos θ), float32(sin θ), and each product is rounded
// before the sum in both.
func TestRopeTableMatchesCPU(t *testing.T) {
	c, prog := cpuOps(t, "test/single-tiny", func(cfg *configs.Config) {
		m := &cfg.Model
		m.Heads, m.KVHeads, m.HeadDim, m.Hidden = 2, 1, 64, 128
		cfg.Workload.Context, cfg.Workload.OutputTokens = 40, 4
	})
	op := opNamed(t, prog, "L00.attn")
	if op.RopeTheta == 0 {
		t.Fatal("single-tiny has no rotary embeddings")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	qkv := fill(t, c, op, true, rng)
	past := 0
	if err := c.Exec(context.Background(), op, past); err != nil {
		t.Fatal(err)
	}
	buf, err := c.Buffer(op.In, op.Microbatch, op.Rows*op.InWidth)
	if err != nil {
		t.Fatal(err)
	}
	want := buf.(pexec.F32)
	table := ropeTable(40, op.HeadDim, op.RopeTheta)
	hd, row := op.HeadDim, op.InWidth
	for r := 0; r < op.Rows; r++ {
		pos := past + r%op.QLen
		for h := 0; h < op.Heads+op.KVHeads; h++ { // q heads, then k heads: contiguous
			ropeTableModel(qkv[r*row+h*hd:][:hd], pos, table)
		}
	}
	for i := range want {
		if math.Float32bits(qkv[i]) != math.Float32bits(want[i]) {
			t.Fatalf("qkv[%d] (row %d, column %d): table rotation %v, exec/cpu %v", i, i/row, i%row, qkv[i], want[i])
		}
	}
}

// TestAddNormModelMatchesCPU holds the fused residual add + norm against
// exec/cpu's residual op followed by its norm op: RMSNorm (single-tiny's
// mlp_norm) and LayerNorm with bias (gpt2-tiny's). In fp32 the two differ
// only in the order of fp32 products and sums: a few ulps of outputs
// below ~10, 1e-5 allows for it. Rounding x + y to a storage type of unit
// roundoff u moves each x by ≤ u·max|x|; through the row's centring and
// 1/σ (inv) that is ≤ 3u·max|x|·inv·max|w| on an output (x itself, the
// mean, and σ each moved by at most u·max|x|), and the rounded output
// adds u·|out|: the bound is checked row by row.
func TestAddNormModelMatchesCPU(t *testing.T) {
	for _, tc := range []struct{ config, residual, norm string }{
		{"test/single-tiny", "L00.attn_residual", "L00.mlp_norm"},
		{"test/gpt2-tiny", "L00.attn_residual", "L00.mlp_norm"},
	} {
		c, prog := cpuOps(t, tc.config, nil)
		res, norm := opNamed(t, prog, tc.residual), opNamed(t, prog, tc.norm)
		rng := rand.New(rand.NewPCG(5, 6))
		y := fill(t, c, res, true, rng)
		x := fill(t, c, res, false, rng)
		for _, op := range []*partition.Op{res, norm} {
			if err := c.Exec(context.Background(), op, 0); err != nil {
				t.Fatal(err)
			}
		}
		wantX, want := read(t, c, res), read(t, c, norm)
		w := c.Weight(norm.Layer, norm.Tensor)
		var b []float32
		if norm.Bias != "" {
			b = c.Weight(norm.Layer, norm.Bias)
		}
		if norm.Kind == partition.LayerNorm && b == nil {
			t.Fatalf("%s: a LayerNorm without its bias", tc.config)
		}
		H := len(w)
		var maxW float64
		for _, v := range w {
			maxW = max(maxW, math.Abs(float64(v)))
		}
		// Per row: max|x + y|, 1/σ (1/rms for RMSNorm) in float64, max|out|.
		bound := func(r int, u float64) float64 {
			xr, or := wantX[r*H:(r+1)*H], want[r*H:(r+1)*H]
			var mx, mo, s, mean float64
			for _, v := range xr {
				mx = max(mx, math.Abs(float64(v)))
				if norm.Kind == partition.LayerNorm {
					mean += float64(v) / float64(H)
				}
			}
			for _, v := range xr {
				s += (float64(v) - mean) * (float64(v) - mean)
			}
			for _, v := range or {
				mo = max(mo, math.Abs(float64(v)))
			}
			inv := 1 / math.Sqrt(s/float64(H)+norm.Eps)
			return 3*u*mx*inv*maxW + u*mo + 1e-5
		}
		for _, st := range storageTypes {
			round := dtypes[st.name].round
			gx, got := append([]float32(nil), x...), make([]float32, len(want))
			addNormModel(gx, y, got, w, b, norm.Rows, norm.Eps, round)
			for r := 0; r < norm.Rows; r++ {
				if d, tol := maxAbsDiff(got[r*H:(r+1)*H], want[r*H:(r+1)*H]), bound(r, st.u); d > tol {
					t.Errorf("%s %s %s row %d: max |model − cpu| = %.3g, tolerance %.3g", tc.config, norm.Kind, st.name, r, d, tol)
					break
				}
			}
			if st.name == "fp32" {
				if d := maxAbsDiff(gx, wantX); d != 0 {
					t.Errorf("%s: the residual sum differs from exec/cpu's by %.3g in fp32", tc.config, d)
				}
			}
		}
	}
}
