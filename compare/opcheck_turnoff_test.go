package compare

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// TestOpCheckTurnOff: a send's wait is its turn's time off the core,
// which sim put before its launch (sim/optable_turnoff.go) and a run's
// Send call does not hold; the op check takes it out of the send row and
// keeps a receive's wait (the run's receive waits too):
//
//	prefill send: 0.3 ms slice, 0.2 ms of it the turn's time off → 0.1 ms
//	decode send: steps 0 and 1, 0.15 ms slices, 0.1 ms waits → 0.05 ms a step
//	prefill recv: 0.4 ms slice, 0.3 ms waiting for its message → 0.4 ms
//	prefill gemm: 1 ms (table; no op gap) → 1 ms
func TestOpCheckTurnOff(t *testing.T) {
	steps := [][]float64{{1, 2}, {1, 2}, {1, 2}}
	m := &exec.Measurement{Ranks: []exec.RankResult{{Rank: 0, StepEndS: steps, PhaseBusyS: map[string]map[string][]float64{
		"prefill": {"gemm": {1e-3, 1e-3, 1e-3}, "send": {0.1e-3, 0.1e-3, 0.1e-3}, "recv": {0.4e-3, 0.4e-3, 0.4e-3}},
		"decode":  {"send": {0.1e-3, 0.1e-3, 0.1e-3}}}}}}
	cfg := &configs.Config{}
	gemm, send, recv := &partition.Op{Kind: partition.Gemm}, &partition.Op{Kind: partition.Send, Peer: 1}, &partition.Op{Kind: partition.Recv, Peer: 1}
	est := &sim.Estimate{Plan: &partition.Plan{Config: cfg}, Timeline: &sim.Timeline{Slices: []sim.Slice{
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: recv, StartS: 0, EndS: 0.4e-3, WaitS: 0.3e-3, Bound: sim.BoundLatency},
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, StartS: 0.4e-3, EndS: 1.4e-3, Bound: sim.BoundTable},
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: send, StartS: 1.4e-3, EndS: 1.7e-3, WaitS: 0.2e-3, Bound: sim.BoundLatency},
		{Rank: 0, Phase: partition.Decode, Step: 0, Op: send, StartS: 2e-3, EndS: 2.15e-3, WaitS: 0.1e-3, Bound: sim.BoundLatency},
		{Rank: 0, Phase: partition.Decode, Step: 1, Op: send, StartS: 3e-3, EndS: 3.15e-3, WaitS: 0.1e-3, Bound: sim.BoundLatency},
	}}}
	want := map[string]float64{"prefill send": 0.1e-3, "decode send": 0.05e-3, "prefill recv": 0.4e-3, "prefill gemm": 1e-3}
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
