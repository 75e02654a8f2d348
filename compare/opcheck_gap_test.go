package compare

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// TestOpCheckOpGap: the estimate's profile has an op gap of 0.1 ms, which
// sim added to each compute op it priced from the table; the op check
// takes it out of those and of nothing else:
//
//	prefill gemm: 1 ms (roofline, kept) + 2 ms (table) − 0.1 ms → 2.9 ms
//	decode gemm: 1 ms (table) − 0.1 ms a step → 0.9 ms per step
//	decode all_reduce: 0.25 ms from the table in step 1 (communication,
//	  kept) → 0.125 ms per step
func TestOpCheckOpGap(t *testing.T) {
	steps := [][]float64{{1, 2}, {1, 2}, {1, 2}}
	m := &exec.Measurement{Ranks: []exec.RankResult{{Rank: 0, StepEndS: steps, PhaseBusyS: map[string]map[string][]float64{
		"prefill": {"gemm": {3e-3, 3e-3, 3e-3}}, "decode": {"gemm": {2e-3, 2e-3, 2e-3}, "all_reduce": {1e-3, 1e-3, 1e-3}}}}}}
	cfg := &configs.Config{}
	cfg.Hardware.OpTimes = []configs.OpTime{{Kind: configs.OpGapKind, Shape: configs.OpGapShape, Size: 1,
		TimeS: 0.1e-3, TimeMinS: 0.1e-3, TimeMaxS: 0.1e-3, Samples: 1, Ranks: 1}}
	gemm, ar := &partition.Op{Kind: partition.Gemm}, &partition.Op{Kind: partition.AllReduce}
	est := &sim.Estimate{Plan: &partition.Plan{Config: cfg}, Timeline: &sim.Timeline{Slices: []sim.Slice{
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, StartS: 0, EndS: 1e-3, Bound: sim.BoundCompute},
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, StartS: 1e-3, EndS: 3e-3, Bound: sim.BoundTable},
		{Rank: 0, Phase: partition.Decode, Step: 0, Op: gemm, StartS: 3e-3, EndS: 4e-3, Bound: sim.BoundTable},
		{Rank: 0, Phase: partition.Decode, Step: 1, Op: gemm, StartS: 4e-3, EndS: 5e-3, Bound: sim.BoundTable},
		{Rank: 0, Phase: partition.Decode, Step: 1, Op: ar, StartS: 5e-3, EndS: 5.25e-3, Bound: sim.BoundTable},
	}}}
	want := map[string]float64{"prefill gemm": 2.9e-3, "decode gemm": 0.9e-3, "decode all_reduce": 0.125e-3}
	rows := OpCheck(m, est)
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %d", rows, len(want))
	}
	for _, r := range rows {
		if w, ok := want[r.Phase+" "+r.Kind]; !ok || math.Abs(r.ModeledS-w) > 1e-12 {
			t.Errorf("%s %s modeled %g s, want %g s", r.Phase, r.Kind, r.ModeledS, w)
		}
	}
}
