package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestOpGap: single-tiny (one rank, no host cores: no stretch) with every
// compute op 3 µs from the table, priced without and with an op gap of
// 0.25 µs: every compute slice lasts exactly 0.25 µs longer (3 + 0.25 =
// 3.25 µs, its host step cost the same in both), so TPOT grows by 0.25 µs
// times the decode Program's compute ops and TTFT by 0.25 µs times the
// prefill Program's; OpGapS reads the gap back, 0 without one.
func TestOpGap(t *testing.T) {
	base := flatTable(t, "test/single-tiny", 3e-6, 0, nil)
	est := func(gap float64) (*Estimate, *partition.Plan) {
		ts := append([]configs.OpTime(nil), base...)
		if gap > 0 {
			ts = append(ts, opEntry(configs.OpGapKind, configs.OpGapShape, 1, 0, gap, 1))
		}
		plan := coresPlan(t, "test/single-tiny", 0, ts, nil)
		e, err := EstimatePlan(plan, Options{EveryRank: true})
		if err != nil {
			t.Fatal(err)
		}
		return e, plan
	}
	a, pa := est(0)
	b, pb := est(0.25e-6)
	if g := OpGapS(pa); g != 0 {
		t.Errorf("no op gap entry: OpGapS %g, want 0", g)
	}
	if g := OpGapS(pb); math.Abs(g-0.25e-6) > 1e-18 {
		t.Errorf("OpGapS %g, want 0.25 µs", g)
	}
	as, bs := a.Timeline.List(), b.Timeline.List()
	if len(as) != len(bs) || len(as) == 0 {
		t.Fatalf("%d slices without the gap, %d with", len(as), len(bs))
	}
	for i := range as {
		sa, sb := &as[i], &bs[i]
		want := 0.0
		if isCompute(sa.Op.Kind) && sa.Bound == BoundTable {
			want = 0.25e-6
		}
		if d := (sb.EndS - sb.StartS) - (sa.EndS - sa.StartS); math.Abs(d-want) > 1e-12 {
			t.Errorf("%s %s: %.6g s longer with the gap, want %.6g s", sa.Phase, sa.Op.Name, d, want)
		}
	}
	count := func(ph partition.Phase) int {
		n, prog := 0, pa.Program(0, ph)
		for i := range prog.Ops {
			if isCompute(prog.Ops[i].Kind) {
				n++
			}
		}
		return n
	}
	if d, want := b.Decode.TPOTS-a.Decode.TPOTS, 0.25e-6*float64(count(partition.Decode)); math.Abs(d-want) > 1e-12 {
		t.Errorf("TPOT %.6g s longer with the gap, want %.6g s (0.25 µs × %d compute ops)", d, want, count(partition.Decode))
	}
	if d, want := b.Prefill.TTFTS-a.Prefill.TTFTS, 0.25e-6*float64(count(partition.Prefill)); math.Abs(d-want) > 1e-12 {
		t.Errorf("TTFT %.6g s longer with the gap, want %.6g s (0.25 µs × %d compute ops)", d, want, count(partition.Prefill))
	}
}

// TestQuickOpTimeHasOpGap: the quick estimate prices a table-priced
// compute op with the op gap as the timeline does (0.25 µs more with an
// entry of 0.25 µs).
func TestQuickOpTimeHasOpGap(t *testing.T) {
	base := flatTable(t, "test/single-tiny", 3e-6, 0, nil)
	price := func(gap float64, kind partition.Kind) float64 {
		ts := append([]configs.OpTime(nil), base...)
		if gap > 0 {
			ts = append(ts, opEntry(configs.OpGapKind, configs.OpGapShape, 1, 0, gap, 1))
		}
		plan := coresPlan(t, "test/single-tiny", 0, ts, nil)
		c := NewQuickCache(CollectiveOptions{}).withReset(plan)
		for _, op := range plan.Program(0, partition.Decode).Ops {
			if op.Kind == kind {
				v, b, err := c.opTime(plan, &op, 1, false, 0, 1, partition.Decode)
				if err != nil || (kind == partition.Gemm && b != BoundTable) {
					t.Fatalf("%s: %v, bound %s", op.Name, err, b)
				}
				return v
			}
		}
		t.Fatalf("no %s op", kind)
		return 0
	}
	if d := price(0.25e-6, partition.Gemm) - price(0, partition.Gemm); math.Abs(d-0.25e-6) > 1e-15 {
		t.Errorf("a table-priced GEMM is %g s longer with the gap, want 0.25 µs", d)
	}
}
