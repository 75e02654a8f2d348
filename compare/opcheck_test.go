package compare

import (
	"math"
	"testing"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// TestOpCheck: two measured ranks, three iterations of 2 decode steps each.
//
//	rank 0: prefill gemm per iteration 3, 3, 30 ms (one preempted) → median 3 ms;
//	        decode gemm 2 ms per iteration → 1 ms per step
//	rank 1: prefill gemm 4 ms; decode gemm 3 ms → 1.5 ms per step;
//	        decode all_reduce 1 ms → 0.5 ms per step
//	measured means over ranks: prefill gemm (3+4)/2 = 3.5 ms; decode gemm
//	1.25 ms; decode all_reduce 0.5 ms (1 rank)
//
// Modeled: rank 0 simulated, prefill gemm slices 1 + 2 ms (one from the
// table), decode steps 0 and 1 one gemm of 1 ms each (table) → 3 ms and
// 1 ms per step; a decode all_reduce of 0.25 ms in step 1 only → 0.125 ms
// per step.
func TestOpCheck(t *testing.T) {
	steps := [][]float64{{1, 2}, {1, 2}, {1, 2}}
	m := &exec.Measurement{Ranks: []exec.RankResult{
		{Rank: 0, StepEndS: steps, PhaseBusyS: map[string]map[string][]float64{
			"prefill": {"gemm": {3e-3, 3e-3, 30e-3}}, "decode": {"gemm": {2e-3, 2e-3, 2e-3}}}},
		{Rank: 1, StepEndS: steps, PhaseBusyS: map[string]map[string][]float64{
			"prefill": {"gemm": {4e-3, 4e-3, 4e-3}}, "decode": {"gemm": {3e-3, 3e-3, 3e-3}, "all_reduce": {1e-3, 1e-3, 1e-3}}}},
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
	// Results without per-phase timers (an older partbench) have no op check.
	m.Ranks[0].PhaseBusyS = nil
	if rows := OpCheck(m, est); rows != nil {
		t.Errorf("no decode timers: %+v", rows)
	}
}
