package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func opTimes(kind, shape string, pts ...[3]float64) []configs.OpTime {
	var ts []configs.OpTime
	for _, p := range pts {
		ts = append(ts, configs.OpTime{Kind: kind, Shape: shape, Size: int64(p[0]), Context: int64(p[1]), TimeS: p[2], TimeMinS: p[2], TimeMaxS: p[2], Samples: 1, Ranks: 1})
	}
	return ts
}

func TestOpTableLookup1D(t *testing.T) {
	// gemm n=8 k=8 measured at 4, 16 and 64 rows: 1, 4 and 8 µs. A compute
	// op interpolates linearly in rows.
	tab := NewOpTable(opTimes("gemm", "n=8 k=8 bias=false", [3]float64{4, 0, 1e-6}, [3]float64{16, 0, 4e-6}, [3]float64{64, 0, 8e-6}))
	for _, c := range []struct {
		size int64
		want float64
		ok   bool
	}{
		{4, 1e-6, true},  // measured
		{16, 4e-6, true}, // measured
		// 8 rows: u = (8−4)/(16−4) = 1/3 → 1 + 3·(1/3) = 2 µs.
		{8, 2e-6, true},
		// 32 rows: u = (32−16)/(64−16) = 1/3 → 4 + 4·(1/3) = 16/3 µs.
		{32, 16.0 / 3 * 1e-6, true},
		// 2 rows, below the range: the line through 4 and 16 rows goes on,
		// 1 + 3·(2−4)/12 = 0.5 µs; not under 1·2/4 = 0.5 µs.
		{2, 0.5e-6, true},
		{128, 0, false}, // above the range: roofline
	} {
		got, ok := tab.Lookup("gemm", "n=8 k=8 bias=false", c.size, 0)
		if ok != c.ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("size %d: (%g, %v), want (%g, %v)", c.size, got, ok, c.want, c.ok)
		}
	}
	if _, ok := tab.Lookup("gemm", "n=8 k=16 bias=false", 8, 0); ok {
		t.Error("another shape has no entry")
	}
	if _, ok := tab.Lookup("rmsnorm", "n=8 k=8 bias=false", 8, 0); ok {
		t.Error("another kind has no entry")
	}
	var none *OpTable
	if _, ok := none.Lookup("gemm", "", 1, 0); ok || none.Len() != 0 || NewOpTable(nil) != nil {
		t.Error("a nil table has no entries")
	}

	// A batch's decode and prefill only (16 and 32,512 rows: 20 µs and
	// 1,520 µs) and a 2,032-row prefill between them: linear,
	// 20 + 1,500·(2,032 − 16)/(32,512 − 16) = 20 + 1,500·2,016/32,496
	// = 113.057 µs, where a power law through the two points gave
	// 20·76^u, u = ln(2,032/16)/ln(32,512/16) = 0.63626, = 315.6 µs.
	far := NewOpTable(opTimes("residual", "width=4096", [3]float64{16, 0, 20e-6}, [3]float64{32512, 0, 1520e-6}))
	want := 20e-6 + 1500e-6*2016/32496
	if got, ok := far.Lookup("residual", "width=4096", 2032, 0); !ok || math.Abs(got-want) > 1e-15 {
		t.Errorf("2,032 rows: (%g, %v), want %g", got, ok, want)
	}

	// Every other kind — here an all_reduce by bytes at 256 B and 4 KiB:
	// 10 and 40 µs — as a power law: at 1 KiB u = ln(1024/256)/ln(4096/256)
	// = 1/2 → √(10·40) = 20 µs (linear would give 10 + 30·768/3,840 = 16).
	ar := NewOpTable(opTimes("all_reduce", "ranks=2", [3]float64{256, 0, 10e-6}, [3]float64{4096, 0, 40e-6}))
	if got, ok := ar.Lookup("all_reduce", "ranks=2", 1024, 0); !ok || math.Abs(got-20e-6) > 1e-15 {
		t.Errorf("all_reduce at 1 KiB: (%g, %v), want 20 µs", got, ok)
	}
}

func TestOpTableBelowRange(t *testing.T) {
	for _, c := range []struct {
		name   string
		t0, t1 float64 // µs at 16 and 32 rows
		size   int64
		want   float64 // µs
	}{
		// A fixed cost: 10 µs at 16 rows, 12 at 32: 0.125 µs a row, so
		// 1 row costs 10 − 15·0.125 = 8.125 µs (the floor 10·1/16 = 0.625
		// is lower).
		{"fixed cost", 10, 12, 1, 8.125},
		// Superlinear: 2 µs at 16, 8 at 32: the line, 2 − 8·0.375 = −1 µs
		// at 8 rows, is under the floor 2·8/16 = 1 µs, which is charged.
		{"floor", 2, 8, 8, 1},
	} {
		tab := NewOpTable(opTimes("gemm", "n=8 k=8 bias=false", [3]float64{16, 0, c.t0 * 1e-6}, [3]float64{32, 0, c.t1 * 1e-6}))
		if got, ok := tab.Lookup("gemm", "n=8 k=8 bias=false", c.size, 0); !ok || math.Abs(got-c.want*1e-6) > 1e-15 {
			t.Errorf("%s: %d rows: (%g, %v), want %g µs", c.name, c.size, got, ok, c.want)
		}
	}
	// One measured size: no line, no entry below it.
	one := NewOpTable(opTimes("gemm", "n=8 k=8 bias=false", [3]float64{16, 0, 1e-6}))
	if _, ok := one.Lookup("gemm", "n=8 k=8 bias=false", 1, 0); ok {
		t.Error("one measured size: an entry below it")
	}
	// A power-law kind (an all_reduce by bytes) has none below its range.
	ar := NewOpTable(opTimes("all_reduce", "ranks=2", [3]float64{256, 0, 10e-6}, [3]float64{4096, 0, 40e-6}))
	if _, ok := ar.Lookup("all_reduce", "ranks=2", 64, 0); ok {
		t.Error("all_reduce below its measured bytes: an entry")
	}
	// Attention below its measured query rows, bilinearly: rows {2, 4} ×
	// contexts {4, 8}, t = q·ctx µs at the corners (8, 16, 16, 32). At one
	// row and context 6: along the rows at context 4, 8 − 8/2 = 4 µs (floor
	// 8/2 = 4), at context 8, 16 − 16/2 = 8 (floor 8); along the context
	// halfway, 6 µs = 1·6.
	sh := "seqs=1 heads=1 kv_heads=1 head_dim=8 rope=true bidirectional=false"
	at := NewOpTable(opTimes("attention", sh,
		[3]float64{2, 4, 8e-6}, [3]float64{4, 4, 16e-6}, [3]float64{2, 8, 16e-6}, [3]float64{4, 8, 32e-6}))
	if got, ok := at.Lookup("attention", sh, 1, 6); !ok || math.Abs(got-6e-6) > 1e-15 {
		t.Errorf("attention at (1, 6): (%g, %v), want 6 µs", got, ok)
	}
}

func TestOpTableLookup2D(t *testing.T) {
	// Attention at sizes (query rows) {1, 2} × contexts {1, 4}: corners 1, 2, 4, 8 µs.
	sh := "seqs=1 heads=1 kv_heads=1 head_dim=8 rope=true bidirectional=false"
	tab := NewOpTable(opTimes("attention", sh,
		[3]float64{1, 1, 1e-6}, [3]float64{2, 1, 2e-6}, [3]float64{1, 4, 4e-6}, [3]float64{2, 4, 8e-6}))
	for _, c := range []struct {
		size, ctx int64
		want      float64
		ok        bool
	}{
		{2, 4, 8e-6, true}, // a corner
		// size 2, context 2: v = (2−1)/(4−1) = 1/3 between 2 and 8 µs → 4 µs.
		{2, 2, 4e-6, true},
		// size 1, context 3: v = 2/3 between 1 and 4 µs → 3 µs.
		{1, 3, 3e-6, true},
		{1, 8, 0, false}, // context beyond the grid
		{3, 2, 0, false}, // size beyond the grid
	} {
		got, ok := tab.Lookup("attention", sh, c.size, c.ctx)
		if ok != c.ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("(%d, %d): (%g, %v), want (%g, %v)", c.size, c.ctx, got, ok, c.want, c.ok)
		}
	}
	// A missing corner: no entry at (2, 4) → (2, 2) cannot be interpolated.
	part := NewOpTable(opTimes("attention", sh, [3]float64{1, 1, 1e-6}, [3]float64{2, 1, 2e-6}, [3]float64{1, 4, 4e-6}))
	if _, ok := part.Lookup("attention", sh, 2, 2); ok {
		t.Error("a cell with a missing corner has no entry")
	}
	// Bilinear: corners (2,2) 1, (8,2) 2, (2,8) 4, (8,8) 8 µs at (4, 4),
	// u = v = (4−2)/(8−2) = 1/3: along the size 1 + 1/3 = 4/3 and 4 + 4/3
	// = 16/3, along the context 4/3 + (16/3 − 4/3)/3 = 8/3 µs. A time
	// a + b·q + c·ctx + d·q·ctx is reproduced exactly: t = q·ctx µs, known
	// at the corners (2,2) 4, (8,2) 16, (2,8) 16, (8,8) 64, gives 3·5 = 15 µs
	// at (3, 5).
	four := NewOpTable(opTimes("attention", sh,
		[3]float64{2, 2, 1e-6}, [3]float64{8, 2, 2e-6}, [3]float64{2, 8, 4e-6}, [3]float64{8, 8, 8e-6}))
	if got, ok := four.Lookup("attention", sh, 4, 4); !ok || math.Abs(got-8.0/3*1e-6) > 1e-12 {
		t.Errorf("centre: (%g, %v), want 8/3 µs", got, ok)
	}
	prod := NewOpTable(opTimes("attention", sh,
		[3]float64{2, 2, 4e-6}, [3]float64{8, 2, 16e-6}, [3]float64{2, 8, 16e-6}, [3]float64{8, 8, 64e-6}))
	if got, ok := prod.Lookup("attention", sh, 3, 5); !ok || math.Abs(got-15e-6) > 1e-12 {
		t.Errorf("q·ctx at (3, 5): (%g, %v), want 15 µs", got, ok)
	}
}

func TestOpKey(t *testing.T) {
	for _, c := range []struct {
		op            partition.Op
		kind, shape   string
		size, context int64
	}{
		{partition.Op{Kind: partition.Gemm, Rows: 40, N: 128, K: 64}, "gemm", "n=128 k=64 bias=false", 40, 0},
		{partition.Op{Kind: partition.Attention, Rows: 80, Seqs: 4, QLen: 20, Past: 0, Heads: 8, KVHeads: 4, HeadDim: 8, RopeTheta: 1e4},
			"attention", "seqs=4 heads=8 kv_heads=4 head_dim=8 rope=true bidirectional=false", 20, 20},
		{partition.Op{Kind: partition.Norm, Rows: 4, OutWidth: 64}, "rmsnorm", "width=64", 4, 0},
		{partition.Op{Kind: partition.AllReduce, Rows: 4, Group: []int{0, 1}, Bytes: 1024}, "all_reduce", "ranks=2", 1024, 0},
		{partition.Op{Kind: partition.Send, Rows: 4, Peer: 1, Bytes: 512}, "send", "ranks=2", 512, 0},
	} {
		k, sh, sz, cx := OpKey(&c.op)
		if k != c.kind || sh != c.shape || sz != c.size || cx != c.context {
			t.Errorf("%s: (%s, %q, %d, %d), want (%s, %q, %d, %d)", c.op.Kind, k, sh, sz, cx, c.kind, c.shape, c.size, c.context)
		}
	}
}

// TestEstimateUsesOpTable: a table entry for every compute op of
// single-tiny's prefill makes each of them cost exactly the entry and be
// marked "table"; ops without an entry keep the roofline.
func TestEstimateUsesOpTable(t *testing.T) {
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ts []configs.OpTime
	seen := map[string]bool{}
	for _, op := range plan.Program(0, partition.Prefill).Ops {
		if op.Kind != partition.Gemm {
			continue
		}
		kind, shape, size, ctx := OpKey(&op)
		if k := shape + string(rune(size)); !seen[k] {
			seen[k] = true
			ts = append(ts, opTimes(kind, shape, [3]float64{float64(size), float64(ctx), 1e-3})...)
		}
	}
	cfg.Hardware.OpTimes = ts
	e, err := EstimatePlan(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var table, other int
	for _, sl := range e.Timeline.All() {
		if sl.Phase != partition.Prefill {
			continue
		}
		if sl.Op.Kind == partition.Gemm {
			table++
			if sl.Bound != BoundTable || math.Abs(sl.EndS-sl.StartS-1e-3) > 1e-12 {
				t.Fatalf("%s: bound %s, %g s; want table, 1 ms", sl.Op.Name, sl.Bound, sl.EndS-sl.StartS)
			}
		} else if sl.Bound == BoundTable {
			t.Fatalf("%s (%s) has no entry but is marked table", sl.Op.Name, sl.Op.Kind)
		} else {
			other++
		}
	}
	if table == 0 || other == 0 {
		t.Fatalf("%d table ops, %d roofline ops: want both", table, other)
	}
	// Per rank: the prefill's counts, plus one decode step's: its LM head
	// (4 rows, as in the prefill after the final norm) from the table, its
	// layers' GEMMs (4 rows, not in the table) and the rest by the roofline.
	tab := NewOpTable(ts)
	decTable, decModel := 0, 0
	for _, op := range plan.Program(0, partition.Decode).Ops {
		if _, ok := tab.Time(&op); ok {
			decTable++
		} else {
			decModel++
		}
	}
	if decTable != 1 {
		t.Fatalf("%d decode ops in the table, want 1 (the LM head)", decTable)
	}
	if r := rankRow(t, e, 0); r.TableOps != table+decTable || r.ModelOps != other+decModel {
		t.Errorf("rank 0 counts %d table, %d model; want %d, %d", r.TableOps, r.ModelOps, table+decTable, other+decModel)
	}
}
