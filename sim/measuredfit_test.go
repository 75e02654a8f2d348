package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
)

// A fit of model-generated points recovers the constants they were made
// with: llama2-13b-2k (one H100, 4 of its layers) under a runtime of 0.7 ms per step, 20 µs
// per sequence and compute efficiency 0.58, at batches 1, 4 and 16 with a
// 512-token prompt and 32 output tokens; the fit starts from the NeMo
// numbers (2 ms, 0 per sequence, efficiency 0.70).
func TestFitRuntimeRecoversKnownConstants(t *testing.T) {
	cfg, err := configs.Load("llama2-13b-2k")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.Layers = 4 // Llama-2-13B's widths, fewer layers: the same terms, a faster test
	truth := *cfg
	rt, err := configs.LoadRuntime("nemo")
	if err != nil {
		t.Fatal(err)
	}
	rt.StepOverheadS, rt.StepPerSeqS, rt.Ranges = 0.7e-3, 20e-6, configs.RuntimeRanges{}
	truth.Runtime = rt
	truth.Hardware.GPU = rt.Apply(truth.Hardware.GPU)
	truth.Hardware.ComputeEfficiency = 0.58
	opts := Options{DecodeSteps: 3}
	var pts []MeasuredPoint
	for _, b := range []int{1, 4, 16} {
		p := MeasuredPoint{Source: "generated", Batch: b, Input: 512, Output: 8}
		c, err := pointConfig(&truth, p)
		if err != nil {
			t.Fatal(err)
		}
		e, err := EstimateConfig(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		p.TTFTS, p.TPOTS = e.Prefill.TTFTS, e.Decode.TPOTS
		pts = append(pts, p)
	}
	fit, err := FitRuntime(cfg, pts, opts, "fitted")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"step_overhead_s", fit.Runtime.StepOverheadS, 0.7e-3},
		{"step_per_seq_s", fit.Runtime.StepPerSeqS, 20e-6},
		{"compute_efficiency", fit.ComputeEfficiency, 0.58},
	} {
		if math.Abs(c.got-c.want) > 0.05*c.want {
			t.Errorf("%s: fitted %g, want %g ± 5 %%", c.name, c.got, c.want)
		}
	}
	if fit.Before.Median < 0.05 || fit.After.Max > 0.01 {
		t.Errorf("errors before %+v (the NeMo start should miss by > 5 %%), after %+v (want ≤ 1 %%)", fit.Before, fit.After)
	}
	if len(fit.Fitted) != 3 || fit.Runtime.Name != "fitted" {
		t.Errorf("fitted %v as %q", fit.Fitted, fit.Runtime.Name)
	}
}
