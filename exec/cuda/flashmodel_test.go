package cuda

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
)

// flashCase is one attention call held against exec/cpu: a first call over
// positions [0, past) fills the cache (chunked prefill), the second is the
// call under test over [past, past+q).
type flashCase struct {
	seqs, hl, kvl, hd, past, q int
	bidir                      bool
}

func (c flashCase) String() string {
	return fmt.Sprintf("seqs%d_h%d_kv%d_hd%d_past%d_q%d_bidir%v", c.seqs, c.hl, c.kvl, c.hd, c.past, c.q, c.bidir)
}

func (c flashCase) geom() attnGeom {
	return attnGeom{seqs: c.seqs, q: c.q, past: c.past, hl: c.hl, kvl: c.kvl, hd: c.hd, context: c.past + c.q + 2, bidir: c.bidir}
}

// attnInputs are the qkv rows of both calls (rounded to the storage type)
// and the KV cache they leave, as the backend's layout holds them.
type attnInputs struct {
	first, qkv []float32 // rows of the cache-filling call and of the call under test
	kc, vc     []float32
}

// newAttnInputs draws q uniform in [−qAmp, qAmp) and k, v in [−1, 1),
// rounded by round; qAmp > 1 spreads the scores so that the running max
// moves between tiles (a dropped rescale shows).
func newAttnInputs(c flashCase, g attnGeom, round func(float32) float32, seed uint64, qAmp float32) attnInputs {
	rng := rand.New(rand.NewPCG(seed, 7))
	row, kvw := (c.hl+2*c.kvl)*c.hd, c.kvl*c.hd
	draw := func(rows int) []float32 {
		v := make([]float32, rows*row)
		for r := 0; r < rows; r++ {
			for e := 0; e < row; e++ {
				amp := float32(1)
				if e < c.hl*c.hd {
					amp = qAmp
				}
				v[r*row+e] = round(amp * (2*rng.Float32() - 1))
			}
		}
		return v
	}
	in := attnInputs{first: draw(c.seqs * c.past), qkv: draw(c.seqs * c.q)}
	in.kc = make([]float32, c.seqs*g.context*kvw)
	in.vc = make([]float32, c.seqs*g.context*kvw)
	put := func(rows []float32, q, past int) {
		for i := 0; i < c.seqs; i++ {
			for j := 0; j < q; j++ {
				r := rows[(i*q+j)*row:][:row]
				at := (i*g.context + past + j) * kvw
				copy(in.kc[at:at+kvw], r[c.hl*c.hd:c.hl*c.hd+kvw])
				copy(in.vc[at:at+kvw], r[c.hl*c.hd+kvw:])
			}
		}
	}
	put(in.first, c.past, 0)
	put(in.qkv, c.q, c.past)
	return in
}

// cpuAttention runs exec/cpu's attention op (no rotary embeddings) on the
// two calls of c and returns the second call's output rows.
func cpuAttention(t *testing.T, c flashCase, in attnInputs) []float32 {
	t.Helper()
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := &cfg.Model
	m.Layers, m.Heads, m.KVHeads, m.HeadDim, m.Hidden, m.FFN = 1, c.hl, c.kvl, c.hd, c.hl*c.hd, 32
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = c.seqs, c.past+c.q+2, 2
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var op partition.Op
	for _, o := range plan.Program(0, partition.Prefill).Ops {
		if o.Kind == partition.Attention {
			op = o
			break
		}
	}
	if op.Kind != partition.Attention {
		t.Fatal("the prefill program has no attention op")
	}
	op.RopeTheta, op.Bidirectional = 0, c.bidir
	call := func(rows []float32, q, past int) []float32 {
		op.QLen, op.Rows, op.Seqs = q, c.seqs*q, c.seqs
		b, err := ref.Buffer(op.In, 0, op.Rows*op.InWidth)
		if err != nil {
			t.Fatal(err)
		}
		copy(b.(pexec.F32), rows)
		if err := ref.Exec(context.Background(), &op, past); err != nil {
			t.Fatal(err)
		}
		o, err := ref.Buffer(op.Out, 0, op.Rows*op.OutWidth)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), o.(pexec.F32)...)
	}
	if c.past > 0 {
		call(in.first, c.past, 0)
	}
	return call(in.qkv, c.q, c.past)
}

// maxAbsDiff is max |a[i] − b[i]| (NaN counts as +Inf).
func maxAbsDiff(a, b []float32) float64 {
	var worst float64
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		worst = max(worst, d)
	}
	return worst
}

// attnTol is the largest difference from exec/cpu's fp32 attention allowed
// for a storage type of unit roundoff u (fp32 2^−24, fp16 2^−11, bf16
// 2^−8) and values |v| ≤ 1. Rounding each p to the storage type before PV
// changes each weight p_t by at most u·p_t while the sum l keeps the
// unrounded p: |Σ δp_t·v_t| / l ≤ u·max|v|. The rounded output adds at most
// u·|o| ≤ u·max|v|. Beyond that the two differ only in fp32 summation
// order and exp2 of base-2 scores against exp: a few fp32 ulps of scores
// below 16 in magnitude, about 1e-6 of the output (4.3e-7 is the largest
// seen over the cases below in fp32); 4e-6 leaves room for other orders.
func attnTol(u float64) float64 { return 2*u + 4e-6 }

var storageTypes = []struct {
	name string
	u    float64
}{{"fp32", 0x1p-24}, {"fp16", 0x1p-11}, {"bf16", 0x1p-8}}

var prefillCases = []flashCase{
	{seqs: 1, hl: 2, kvl: 2, hd: 64, past: 0, q: 64},   // one tile, exactly
	{seqs: 2, hl: 4, kvl: 2, hd: 64, past: 0, q: 150},  // GQA 2, q not a multiple of 64
	{seqs: 1, hl: 4, kvl: 1, hd: 128, past: 0, q: 97},  // GQA 4 (MQA), hd 128
	{seqs: 2, hl: 2, kvl: 1, hd: 128, past: 37, q: 70}, // chunked prefill: past not a tile multiple
	{seqs: 1, hl: 2, kvl: 2, hd: 64, past: 0, q: 1},    // one query
	{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 100, q: 1},  // decode-shaped call
	{seqs: 1, hl: 2, kvl: 2, hd: 64, past: 0, q: 90, bidir: true},
	{seqs: 2, hl: 4, kvl: 4, hd: 128, past: 20, q: 130, bidir: true},
}

// TestFlashPrefillModelMatchesCPU holds the prefill kernel's Go model, with
// both tile shapes the kernel is built with, against exec/cpu's attention.
func TestFlashPrefillModelMatchesCPU(t *testing.T) {
	for _, c := range prefillCases {
		g := c.geom()
		for _, st := range storageTypes {
			round := dtypes[st.name].round
			in := newAttnInputs(c, g, round, uint64(c.q*31+c.hd), 3)
			want := cpuAttention(t, c, in)
			for _, tiles := range []flashTiles{{64, 64}, {128, 64}} {
				got := make([]float32, len(want))
				flashPrefillModel(g, tiles, round, in.qkv, in.kc, in.vc, got)
				if d, tol := maxAbsDiff(got, want), attnTol(st.u); d > tol {
					t.Errorf("%v %s tiles %v: max |model − cpu| = %.3g, tolerance %.3g", c, st.name, tiles, d, tol)
				}
			}
		}
	}
}

// TestFlashPrefillModelPlantedBugs: a dropped rescale and a mask that lets
// a query see the next key must both fail the comparison above.
func TestFlashPrefillModelPlantedBugs(t *testing.T) {
	c := flashCase{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 0, q: 150}
	g := c.geom()
	round := dtypes["fp16"].round
	in := newAttnInputs(c, g, round, 11, 3)
	want := cpuAttention(t, c, in)
	for _, bug := range []string{"rescale", "mask"} {
		flashBug = bug
		got := make([]float32, len(want))
		flashPrefillModel(g, flashTiles{64, 64}, round, in.qkv, in.kc, in.vc, got)
		flashBug = ""
		d, tol := maxAbsDiff(got, want), attnTol(0x1p-11)
		t.Logf("planted bug %q: max |model − cpu| = %.3g, tolerance %.3g", bug, d, tol)
		if d <= tol {
			t.Errorf("planted bug %q: max |model − cpu| = %.3g is within the tolerance %.3g: the comparison cannot catch it", bug, d, tol)
		}
	}
}
