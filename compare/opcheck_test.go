package compare

import (
	"math"
	"testing"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// TestOpCheck: two measured ranks, two iterations of 2 decode steps each.
//
//	rank 0: gemm 10 ms in all, 4 ms of it decode → prefill 6/2 = 3 ms, decode 4/4 = 1 ms
//	rank 1: gemm 14 ms, 6 ms decode → prefill 4 ms, decode 1.5 ms; all_reduce 2 ms decode only → 0.5 ms
//	measured means: prefill gemm (3+4)/2 = 3.5 ms; decode gemm 1.25 ms; decode all_reduce 0.5 ms (1 rank)
//
// Modeled: rank 0 simulated, prefill gemm slices 1 + 2 ms (one from the
// table), decode steps 0 and 1 one gemm of 1 ms each (table) → 3 ms and
// 1 ms per step; a decode all_reduce of 0.25 ms in step 1 only → 0.125 ms
// per step.
func TestOpCheck(t *testing.T) {
	m := &exec.Measurement{Ranks: []exec.RankResult{
		{Rank: 0, PrefillS: []float64{1, 1}, StepEndS: [][]float64{{1, 2}, {1, 2}},
			BusyS: map[string]float64{"gemm": 10e-3}, DecodeBusyS: map[string]float64{"gemm": 4e-3}},
		{Rank: 1, PrefillS: []float64{1, 1}, StepEndS: [][]float64{{1, 2}, {1, 2}},
			BusyS: map[string]float64{"gemm": 14e-3, "all_reduce": 2e-3}, DecodeBusyS: map[string]float64{"gemm": 6e-3, "all_reduce": 2e-3}},
	}}
	gemm, ar := &partition.Op{Kind: partition.Gemm}, &partition.Op{Kind: partition.AllReduce}
	est := &sim.Estimate{Timeline: &sim.Timeline{Slices: []sim.Slice{
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, StartS: 0, EndS: 1e-3, Bound: sim.BoundCompute},
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, StartS: 1e-3, EndS: 3e-3, Bound: sim.BoundTable},
		{Rank: 0, Phase: partition.Decode, Step: 0, Op: gemm, StartS: 3e-3, EndS: 4e-3, Bound: sim.BoundTable},
		{Rank: 0, Phase: partition.Decode, Step: 1, Op: gemm, StartS: 4e-3, EndS: 5e-3, Bound: sim.BoundTable},
		{Rank: 0, Phase: partition.Decode, Step: 1, Op: ar, StartS: 5e-3, EndS: 5.25e-3, WaitS: 0.1e-3, Bound: sim.BoundNetwork},
	}}}
	rows := OpCheck(m, est)
	want := []OpCheckRow{
		{Phase: "prefill", Kind: "gemm", Ranks: 2, MeasuredS: 3.5e-3, ModeledS: 3e-3, Ratio: 3.0 / 3.5, TableOps: 1, RooflineOps: 1},
		{Phase: "decode", Kind: "gemm", Ranks: 2, MeasuredS: 1.25e-3, ModeledS: 1e-3, Ratio: 0.8, TableOps: 1},
		{Phase: "decode", Kind: "all_reduce", Ranks: 1, MeasuredS: 0.5e-3, ModeledS: 0.125e-3, Ratio: 0.25, RooflineOps: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i, w := range want {
		g := rows[i]
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
		if g.Phase != w.Phase || g.Kind != w.Kind || g.Ranks != w.Ranks || !near(g.MeasuredS, w.MeasuredS) || !near(g.ModeledS, w.ModeledS) ||
			!near(g.Ratio, w.Ratio) || g.TableOps != w.TableOps || g.RooflineOps != w.RooflineOps {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	// Results without decode timers (an older partbench) have no op check.
	m.Ranks[0].DecodeBusyS = nil
	if rows := OpCheck(m, est); rows != nil {
		t.Errorf("no decode timers: %+v", rows)
	}
}
