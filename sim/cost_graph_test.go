package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// The eleventh gpu-check call's H200 profile and its two configs
// (docs/measurements/gpu-check-h200-2026-11-27): calib-cuda.toml, written
// before graph_op_saved_s existed, and the seed layers at 4 layers, fp16,
// context 2048, at batch 16 (seed4-1gpu) and batch 1 (seed4-b1).
const h200Call11 = "../docs/measurements/gpu-check-h200-2026-11-27/"

// h200Estimate prices config of that call under its calibration, with
// graph_op_saved_s set to saved, and returns the estimate and the decode
// step's ops priced from the table.
func h200Estimate(t *testing.T, config string, saved float64) (*Estimate, int) {
	t.Helper()
	cal, err := configs.LoadCalibration(h200Call11 + "calib-cuda.toml")
	if err != nil {
		t.Fatal(err)
	}
	if cal.Hardware.GraphOpSavedS != 0 || !cal.Hardware.CUDAGraphs {
		t.Fatalf("calib-cuda.toml: graph_op_saved_s %g, cuda_graphs %v; want 0 (written before it), true", cal.Hardware.GraphOpSavedS, cal.Hardware.CUDAGraphs)
	}
	cfg, err := configs.Load(h200Call11 + config)
	if err != nil {
		t.Fatal(err)
	}
	cal.Hardware.GraphOpSavedS = saved
	cal.Apply(cfg)
	e, err := EstimateConfig(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	steps := map[int]int{}
	for _, sl := range e.Timeline.All() {
		if _, comm := sl.Op.Kind.Comm(); sl.Phase == partition.Decode && sl.Bound == BoundTable && !comm {
			steps[sl.Step]++
		}
	}
	n := -1
	for _, c := range steps {
		if n >= 0 && c != n {
			t.Fatalf("%s: decode steps with %v ops from the table", config, steps)
		}
		n = c
	}
	return e, n
}

// TestGraphOpSavedOnTheH200 derives the modeled TPOT of the eleventh
// call's two H200 configs by hand, from calib-cuda.toml's figures plus
// graph_op_saved_s as calibrate now measures it, and holds the model to it
// and to the runs.
//
// Before: the profile has no graph_op_saved_s and prices as it did in that
// call (single-seed4-cal.log, single-seed4-b1-cal.log): TPOT 1.305 ms at
// batch 16 and 0.857 ms at batch 1 (1.3048 and 0.8565 ms unrounded) — each
// decode op at its op-time table entry, plus graph_launch_s 1.42 µs and
// step_overhead_s 0 once per step.
//
// The new term as calibrate would have measured it: its spread of
// step_overhead_s shows seed4-1gpu's graphed decode steps 68.91 µs
// (median) shorter on the host than their 42 ops' table times plus one
// graph launch; held on the device, with the host's share at 0, that is
// the graph's saving: 68.91 / 42 = 1.641 µs per op. seed4-b1's own figure
// is larger (its run: table 857 − 1.4 = 855.6 µs against a 749.5 µs step,
// (855.6 + 1.4 − 749.5) / 42 = 2.56 µs per op), and the median of two
// figures (stats.Median: the lower) is seed4-1gpu's 1.641 µs.
//
// After: every decode step has 42 ops priced from the table (4 layers × 10
// + input + sample), each 1.641 µs less (none below the floor of 0: the
// smallest entry, rmsnorm's — a mean of the standalone norm and those
// fused into a residual — is 2.01 µs at batch 1 and 2.11 µs at batch 16),
// so TPOT falls by 42 × 1.641 = 68.91 µs:
//
//	batch 16: 1.3048 − 0.0689 = 1.2359 ms against the run's mean 1.2390 ms: −0.2 % (was +5.3 %)
//	batch 1:  0.8565 − 0.0689 = 0.7876 ms against the run's mean 0.7495 ms: +5.1 % (was +14.3 %)
//
// TPS (batch / TPOT) moves the other way: 16 / 1.2359 ms = 12,946 tok/s
// against 12,920 (+0.2 %), 1 / 0.7876 ms = 1,270 against 1,334 (−4.8 %).
// TTFT does not move (prefill runs ungraphed).
func TestGraphOpSavedOnTheH200(t *testing.T) {
	const saved = 6.891183669334638e-05 / 42 // spread.step_overhead_s's median, per op
	for _, c := range []struct {
		config            string
		before, tpot, tps float64 // modeled TPOT before (as logged, to 3 places); the run's mean TPOT and TPS
	}{
		{"seed4-1gpu.toml", 1.305e-3, 1.239e-3, 1.292e4},
		{"seed4-b1.toml", 0.857e-3, 0.7494983777777778e-3, 1334.2294829470138},
	} {
		a, n := h200Estimate(t, c.config, 0)
		b, m := h200Estimate(t, c.config, saved)
		if n != 42 || m != 42 {
			t.Fatalf("%s: %d and %d decode ops from the table per step, want 42", c.config, n, m)
		}
		if math.Abs(a.Decode.TPOTS-c.before) > 0.5e-6 {
			t.Errorf("%s: a profile without graph_op_saved_s prices TPOT %.4f ms, want %.3f ms as before", c.config, 1e3*a.Decode.TPOTS, 1e3*c.before)
		}
		if d := a.Decode.TPOTS - b.Decode.TPOTS; math.Abs(d-42*saved) > 1e-12 {
			t.Errorf("%s: TPOT fell by %g s, want 42 × %g = %g", c.config, d, saved, 42*saved)
		}
		if a.Prefill.TTFTS != b.Prefill.TTFTS {
			t.Errorf("%s: TTFT %g → %g: prefill is not graphed", c.config, a.Prefill.TTFTS, b.Prefill.TTFTS)
		}
		errTPOT := (b.Decode.TPOTS - c.tpot) / c.tpot
		errTPS := (b.Decode.TokensPerS - c.tps) / c.tps
		t.Logf("%s: TPOT %.4f → %.4f ms (run %.4f: %+.1f %%), TPS %.0f (run %.0f: %+.1f %%)", c.config, 1e3*a.Decode.TPOTS, 1e3*b.Decode.TPOTS,
			1e3*c.tpot, 100*errTPOT, b.Decode.TokensPerS, c.tps, 100*errTPS)
		if math.Abs(errTPOT) > 0.10 || math.Abs(errTPS) > 0.10 {
			t.Errorf("%s: TPOT %+.1f %%, TPS %+.1f %% against the run: beyond 10 %%", c.config, 100*errTPOT, 100*errTPS)
		}
	}
}

// graph_op_saved_s acts only where a decode step runs as a graph: the same
// profile with cuda_graphs off, or prefill, prices as without it.
func TestGraphOpSavedOnlyInGraphs(t *testing.T) {
	cfg, err := configs.Load(h200Call11 + "seed4-b1.toml")
	if err != nil {
		t.Fatal(err)
	}
	cal, err := configs.LoadCalibration(h200Call11 + "calib-cuda.toml")
	if err != nil {
		t.Fatal(err)
	}
	cal.Hardware.CUDAGraphs = false
	var tpot [2]float64
	for i, saved := range []float64{0, 2e-6} {
		c := *cfg
		h := *cal
		h.Hardware.GraphOpSavedS = saved
		h.Apply(&c)
		e, err := EstimateConfig(&c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tpot[i] = e.Decode.TPOTS
	}
	if tpot[0] != tpot[1] || !(tpot[0] > 0) {
		t.Errorf("without graphs TPOT %g with graph_op_saved_s 0 and %g with 2 µs: want the same", tpot[0], tpot[1])
	}
	// The floor: a saving beyond an op's time leaves it 0 (a fused op's
	// table time is its mark alone), never more than it was.
	g := cal.Hardware
	g.CUDAGraphs, g.GraphOpSavedS = true, 1e-3
	for _, c := range []struct{ t, want float64 }{
		{5e-6, 0},           // 5 µs − 1 ms: the floor
		{2e-3, 2e-3 - 1e-3}, // 2 ms − 1 ms
	} {
		if got := graphTableS(&g, partition.Decode, c.t); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("graphTableS(%g) = %g, want %g", c.t, got, c.want)
		}
		if got := graphTableS(&g, partition.Prefill, c.t); got != c.t {
			t.Errorf("prefill: graphTableS(%g) = %g, want it unchanged", c.t, got)
		}
	}
}
