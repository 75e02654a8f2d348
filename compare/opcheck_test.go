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
	// A later stage that started late (exec.RankResult.StartLagS): rank 1
	// receives in its prefill 0.1 ms per iteration and started 0, 2 and
	// 0.9 ms after the iteration's start → 0.1, 2.1, 1.0 ms, median 1.0 ms;
	// its decode recv (0.2 ms a step) keeps its timer's time.
	late := &exec.Measurement{Ranks: []exec.RankResult{{Rank: 1, StepEndS: steps, StartLagS: []float64{0, 2e-3, 0.9e-3},
		PhaseBusyS: map[string]map[string][]float64{"prefill": {"recv": {0.1e-3, 0.1e-3, 0.1e-3}}, "decode": {"recv": {0.4e-3, 0.4e-3, 0.4e-3}}}}}}
	for _, r := range OpCheck(late, est) {
		want := map[string]float64{"prefill": 1.0e-3, "decode": 0.2e-3}[r.Phase]
		if r.Kind == "recv" && math.Abs(r.MeasuredS-want) > 1e-12 {
			t.Errorf("late stage's %s recv measured %g s, want %g s", r.Phase, r.MeasuredS, want)
		}
	}
	// Results without per-phase timers (an older partbench) have no op check.
	m.Ranks[0].PhaseBusyS = nil
	if rows := OpCheck(m, est); rows != nil {
		t.Errorf("no decode timers: %+v", rows)
	}
}

// A rank whose traced iteration was timed on the device is checked from
// its spans, not its host timers (which on a GPU time the enqueue):
//
//	prefill spans: gemm 2 + 1 ms, attention 0.5 ms → 3 ms, 0.5 ms;
//	decode steps ran as graphs (the measured spans hold the graph on its
//	first op), so the op-by-op replay counts: step 0 gemm 0.4 ms,
//	attention 0.2 ms; step 1 gemm 0.6 ms, attention 0.2 ms → per step
//	gemm 0.5 ms, attention 0.2 ms.
//
// The host timers' 0.01 ms of enqueue are left out, and every row says
// its clock.
func TestOpCheckDeviceSpans(t *testing.T) {
	dev := func(phase, kind string, step int, dur float64, graph int) exec.Span {
		return exec.Span{Phase: phase, Kind: kind, Step: step, DurS: dur, Device: true, Graph: graph}
	}
	r := exec.RankResult{StepEndS: [][]float64{{1, 2}},
		PhaseBusyS: map[string]map[string][]float64{"prefill": {"gemm": {1e-5}, "attention": {1e-5}}, "decode": {"gemm": {2e-5}, "attention": {2e-5}}},
		Spans: []exec.Span{dev("prefill", "gemm", -1, 2e-3, 0), dev("prefill", "attention", -1, 0.5e-3, 0), dev("prefill", "gemm", -1, 1e-3, 0),
			dev("decode", "gemm", 0, 1.4e-3, 2), dev("decode", "attention", 0, 0, -1), dev("decode", "gemm", 1, 1.6e-3, 2), dev("decode", "attention", 1, 0, -1)},
		OpSpans: []exec.Span{dev("decode", "gemm", 0, 0.4e-3, 0), dev("decode", "attention", 0, 0.2e-3, 0),
			dev("decode", "gemm", 1, 0.6e-3, 0), dev("decode", "attention", 1, 0.2e-3, 0)}}
	gemm, attn := &partition.Op{Kind: partition.Gemm}, &partition.Op{Kind: partition.Attention}
	est := &sim.Estimate{Timeline: &sim.Timeline{Slices: []sim.Slice{
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, EndS: 3e-3},
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: attn, EndS: 1e-3},
		{Rank: 0, Phase: partition.Decode, Step: 0, Op: gemm, EndS: 1e-3},
		{Rank: 0, Phase: partition.Decode, Step: 0, Op: attn, EndS: 0.1e-3},
	}}}
	got := map[string]OpCheckRow{}
	for _, row := range OpCheck(&exec.Measurement{Ranks: []exec.RankResult{r}}, est) {
		got[row.Phase+" "+row.Kind] = row
	}
	for k, want := range map[string]float64{"prefill gemm": 3e-3, "prefill attention": 0.5e-3, "decode gemm": 0.5e-3, "decode attention": 0.2e-3} {
		if g := got[k]; math.Abs(g.MeasuredS-want) > 1e-12 || g.Clock != exec.ClockDevice {
			t.Errorf("%s: measured %g s on the %q clock, want %g on the device", k, g.MeasuredS, g.Clock, want)
		}
	}
	// Without device spans the host timers count, and say so.
	r.Spans, r.OpSpans = nil, nil
	for _, row := range OpCheck(&exec.Measurement{Ranks: []exec.RankResult{r}}, est) {
		if row.Clock != exec.ClockHost || row.MeasuredS > 2e-5 {
			t.Errorf("host-timed %s %s: %+v", row.Phase, row.Kind, row)
		}
	}
}

// An asynchronous device's host timers saw the enqueue alone: without
// device spans its rows show no measured time (Clock "enqueue", ratio 0),
// never the enqueue against a device time; with the op check's own
// device-timed iteration (CheckSpans: prefill gemm 2 ms; decode steps 0
// and 1 gemm 0.4 and 0.6 ms → 0.5 ms per step) those count.
func TestOpCheckAsyncDevice(t *testing.T) {
	r := exec.RankResult{StepEndS: [][]float64{{1, 2}}, Async: true,
		PhaseBusyS: map[string]map[string][]float64{"prefill": {"gemm": {1e-5}}, "decode": {"gemm": {2e-5}}}}
	gemm := &partition.Op{Kind: partition.Gemm}
	est := &sim.Estimate{Timeline: &sim.Timeline{Slices: []sim.Slice{
		{Rank: 0, Phase: partition.Prefill, Step: -1, Op: gemm, EndS: 3e-3},
		{Rank: 0, Phase: partition.Decode, Step: 0, Op: gemm, EndS: 1e-3},
	}}}
	rows := OpCheck(&exec.Measurement{Ranks: []exec.RankResult{r}}, est)
	if len(rows) != 2 {
		t.Fatalf("rows %+v, want prefill and decode gemm", rows)
	}
	for _, row := range rows {
		if row.Clock != exec.ClockEnqueue || row.MeasuredS != 0 || row.Ratio != 0 || row.ModeledS == 0 {
			t.Errorf("enqueue-timed %s %s: %+v, want no measured time, clock enqueue, the modeled time kept", row.Phase, row.Kind, row)
		}
	}
	dev := func(phase string, step int, dur float64) exec.Span {
		return exec.Span{Phase: phase, Kind: "gemm", Step: step, DurS: dur, Device: true}
	}
	r.CheckSpans = []exec.Span{dev("prefill", -1, 2e-3), dev("decode", 0, 0.4e-3), dev("decode", 1, 0.6e-3)}
	want := map[string]float64{"prefill": 2e-3, "decode": 0.5e-3}
	for _, row := range OpCheck(&exec.Measurement{Ranks: []exec.RankResult{r}}, est) {
		if row.Clock != exec.ClockDevice || math.Abs(row.MeasuredS-want[row.Phase]) > 1e-12 {
			t.Errorf("check spans, %s %s: %+v, want %g s on the device", row.Phase, row.Kind, row, want[row.Phase])
		}
	}
}

// A pipeline's first stage waits in its first decode step's receive for the
// prefill's last stage: the op check's modeled decode rows average the
// steps the run timed, not every simulated step.
//
//	simulated: rank 0's tokens recv 0.9 ms in step 0, 0.1 ms in steps 1–5
//	           (six steps simulated), one 0.01 ms send per step
//	run of 3 steps: measured 0.9 + 0.1 + 0.1 = 1.1 ms an iteration → 0.3667 ms
//	  a step; modeled (0.9 + 0.1 + 0.1) / 3 = 0.3667 ms (every simulated
//	  step averaged: (0.9 + 5 × 0.1) / 6 = 0.2333 ms, ratio 0.64)
//	run of 8 steps: measured 0.9 + 7 × 0.1 = 1.6 ms → 0.2 ms a step; the six
//	  simulated steps and the last one twice more: (0.9 + 5 × 0.1 + 2 × 0.1)
//	  / 8 = 0.2 ms
//
// The send row counts one op a step in both (six slices over six steps;
// three over three).
func TestOpCheckDecodeStepsOfTheRun(t *testing.T) {
	recv, send := &partition.Op{Kind: partition.Recv}, &partition.Op{Kind: partition.Send}
	var slices []sim.Slice
	at := 0.0
	for step := 0; step < 6; step++ {
		d := 0.1e-3
		if step == 0 {
			d = 0.9e-3
		}
		slices = append(slices,
			sim.Slice{Rank: 0, Phase: partition.Decode, Step: step, Op: recv, StartS: at, EndS: at + d, Bound: sim.BoundLatency},
			sim.Slice{Rank: 0, Phase: partition.Decode, Step: step, Op: send, StartS: at + d, EndS: at + d + 0.01e-3, Bound: sim.BoundLatency})
		at += d + 0.01e-3
	}
	est := &sim.Estimate{Timeline: &sim.Timeline{Slices: slices}}
	for _, tc := range []struct {
		steps    int
		measured float64 // recv per iteration
		want     float64 // per step, both columns
	}{
		{3, 1.1e-3, 1.1e-3 / 3},
		{8, 1.6e-3, 0.2e-3},
	} {
		ends := make([]float64, tc.steps)
		for i := range ends {
			ends[i] = float64(i + 1)
		}
		m := &exec.Measurement{Ranks: []exec.RankResult{{Rank: 0, StepEndS: [][]float64{ends, ends},
			PhaseBusyS: map[string]map[string][]float64{"decode": {"recv": {tc.measured, tc.measured}}}}}}
		var got *OpCheckRow
		rows := OpCheck(m, est)
		for i := range rows {
			if rows[i].Kind == "recv" {
				got = &rows[i]
			}
			if rows[i].Kind == "send" && rows[i].RooflineOps != 1 {
				t.Errorf("%d steps: send row counts %d ops a step, want 1", tc.steps, rows[i].RooflineOps)
			}
		}
		if got == nil {
			t.Fatalf("%d steps: no recv row in %+v", tc.steps, rows)
		}
		if math.Abs(got.MeasuredS-tc.want) > 1e-12 || math.Abs(got.ModeledS-tc.want) > 1e-12 {
			t.Errorf("%d steps: recv measured %g, modeled %g a step; want %g both", tc.steps, got.MeasuredS, got.ModeledS, tc.want)
		}
	}
}

func TestModeledDecodeSteps(t *testing.T) {
	for _, tc := range []struct{ measured, simulated, upTo, repeatLast int }{
		{0, 16, 16, 0},  // nothing measured: every simulated step
		{3, 16, 3, 0},   // the run's three steps
		{16, 16, 16, 0}, // all of them
		{20, 16, 16, 4}, // the last simulated step stands for the 4 beyond
	} {
		upTo, repeat := modeledDecodeSteps(tc.measured, tc.simulated)
		if upTo != tc.upTo || repeat != tc.repeatLast {
			t.Errorf("modeledDecodeSteps(%d, %d) = %d, %d; want %d, %d", tc.measured, tc.simulated, upTo, repeat, tc.upTo, tc.repeatLast)
		}
	}
}
