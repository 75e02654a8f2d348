package compare

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// TestOpCheckGraphOpSaved: the estimate's GPU runs decode steps as graphs
// and saves 0.2 ms per op against the table (graph_op_saved_s), which sim
// took off each decode op it priced from the table; the op check, whose
// measured ops are timed one by one, adds it back there and nowhere else:
//
//	prefill gemm: 1 ms (roofline) + 2 ms (table), ungraphed → 3 ms
//	decode gemm: 1 ms (table) + 0.2 ms a step → 1.2 ms per step
//	decode all_reduce: 0.25 ms from the table in step 1 (communication,
//	  kept) → 0.125 ms per step
//
// With cuda_graphs off nothing is added: decode gemm 1 ms.
func TestOpCheckGraphOpSaved(t *testing.T) {
	steps := [][]float64{{1, 2}, {1, 2}, {1, 2}}
	m := &exec.Measurement{Ranks: []exec.RankResult{{Rank: 0, StepEndS: steps, PhaseBusyS: map[string]map[string][]float64{
		"prefill": {"gemm": {3e-3, 3e-3, 3e-3}}, "decode": {"gemm": {2e-3, 2e-3, 2e-3}, "all_reduce": {1e-3, 1e-3, 1e-3}}}}}}
	gemm, ar := &partition.Op{Kind: partition.Gemm}, &partition.Op{Kind: partition.AllReduce}
	for _, graphs := range []bool{true, false} {
		plan := &partition.Plan{Config: &configs.Config{}}
		plan.System.GPU.CUDAGraphs, plan.System.GPU.GraphOpSavedS = graphs, 0.2e-3
		est := &sim.Estimate{Plan: plan, Timeline: &sim.Timeline{Slices: []sim.Slice{
			{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, StartS: 0, EndS: 1e-3, Bound: sim.BoundCompute},
			{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, StartS: 1e-3, EndS: 3e-3, Bound: sim.BoundTable},
			{Rank: 0, Phase: partition.Decode, Step: 0, Op: gemm, StartS: 3e-3, EndS: 4e-3, Bound: sim.BoundTable},
			{Rank: 0, Phase: partition.Decode, Step: 1, Op: gemm, StartS: 4e-3, EndS: 5e-3, Bound: sim.BoundTable},
			{Rank: 0, Phase: partition.Decode, Step: 1, Op: ar, StartS: 5e-3, EndS: 5.25e-3, Bound: sim.BoundTable},
		}}}
		want := map[string]float64{"prefill gemm": 3e-3, "decode gemm": 1.2e-3, "decode all_reduce": 0.125e-3}
		if !graphs {
			want["decode gemm"] = 1e-3
		}
		rows := OpCheck(m, est)
		if len(rows) != len(want) {
			t.Fatalf("graphs %v: rows %+v, want %d", graphs, rows, len(want))
		}
		for _, r := range rows {
			if w, ok := want[r.Phase+" "+r.Kind]; !ok || math.Abs(r.ModeledS-w) > 1e-12 {
				t.Errorf("graphs %v: %s %s modeled %g s, want %g s", graphs, r.Phase, r.Kind, r.ModeledS, w)
			}
		}
	}
}
