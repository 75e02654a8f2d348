package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// measuredFrom models op over the first n ranks of sys at 1 MiB … 1 GiB and
// returns the busbw as measurements: a system whose true constants are sys's.
func measuredFrom(t *testing.T, sys topology.System, op commcount.Op, n int, opt CollectiveOptions) []MeasuredCollective {
	t.Helper()
	var out []MeasuredCollective
	for b := int64(1 << 20); b <= 1<<30; b *= 2 {
		e := mustCollective(t, sys, op, firstRanks(n), b, opt)
		out = append(out, MeasuredCollective{Op: op, Ranks: firstRanks(n), Bytes: b, BusBWBytesPerS: e.BusBWBytesPerS, Opt: opt})
	}
	return out
}

func tuningOf(rs, rsh, rl, rlh, nb, npr float64) *topology.CollectiveTuning {
	return &topology.CollectiveTuning{RampSimpleS: &rs, RampSimpleHalfBytes: &rsh, RampLLS: &rl, RampLLHalfBytes: &rlh, NVLSBaseS: &nb, NVLSPerRankS: &npr}
}

// A system whose true constants sit on the fit's grids, away from the
// defaults: the fit finds them and its error falls to zero.
func TestFitCollectiveTuningRecoversKnownConstants(t *testing.T) {
	truth := dgxH100(1)
	truth.Topology.Collectives = tuningOf(40e-6, 8<<20, 10e-6, 512<<10, 12.5e-6, 1.5e-6)
	var pts []MeasuredCollective
	pts = append(pts, measuredFrom(t, truth, commcount.AllReduce, 8, CollectiveOptions{})...)
	pts = append(pts, measuredFrom(t, truth, commcount.AllReduce, 4, CollectiveOptions{})...)
	pts = append(pts, measuredFrom(t, truth, commcount.AllGather, 8, CollectiveOptions{Proto: "LL,LL128"})...)
	pts = append(pts, measuredFrom(t, truth, commcount.AllReduce, 8, CollectiveOptions{Algo: "ring", Proto: "Simple"})...)

	fit, err := FitCollectiveTuning(dgxH100(1), pts, "test")
	if err != nil {
		t.Fatal(err)
	}
	if fit.Points != len(pts) {
		t.Errorf("points %d, want %d", fit.Points, len(pts))
	}
	want := truth.Topology.Collectives
	for i, k := range fit.Tuning.Keys() {
		w := *want.Keys()[i].Val
		if math.Abs(*k.Val-w) > 1e-9*math.Max(1, w) {
			t.Errorf("%s = %g, want %g", k.Key, *k.Val, w)
		}
	}
	if fit.After.Max > 1e-9 || !(fit.Before.Max > 0.01) {
		t.Errorf("errors before %+v after %+v: want > 1 %% before (defaults differ from the truth) and 0 after", fit.Before, fit.After)
	}
}

// A PCIe box has no NVSwitch, so no point exercises NVLS: its constants keep
// the defaults (a constant moves only on a strict improvement).
func TestFitCollectiveTuningLeavesUnusedConstants(t *testing.T) {
	truth := pcieBox(1)
	truth.Topology.Collectives = tuningOf(120e-6, 16<<20, 30e-6, 2<<20, 0, 0)
	pts := measuredFrom(t, truth, commcount.AllReduce, 8, CollectiveOptions{})
	fit, err := FitCollectiveTuning(pcieBox(1), pts, "test")
	if err != nil {
		t.Fatal(err)
	}
	d := defaultCollectiveParams
	if *fit.Tuning.NVLSBaseS != d.nvlsBaseS || *fit.Tuning.NVLSPerRankS != d.nvlsPerRankS {
		t.Errorf("NVLS constants moved on a box without NVSwitch: %g, %g", *fit.Tuning.NVLSBaseS, *fit.Tuning.NVLSPerRankS)
	}
	if fit.After.Max > fit.Before.Max {
		t.Errorf("fit made the max error worse: %+v → %+v", fit.Before, fit.After)
	}
}

func TestFitCollectiveTuningNeedsLargeSizes(t *testing.T) {
	pts := []MeasuredCollective{{Op: commcount.AllReduce, Ranks: firstRanks(8), Bytes: 512 << 10, BusBWBytesPerS: 20e9}}
	if _, err := FitCollectiveTuning(dgxH100(1), pts, "x"); err == nil || !strings.Contains(err.Error(), "1048576 B or more") {
		t.Errorf("err = %v, want a refusal naming the 1 MiB floor", err)
	}
}

// A system's tuning replaces the defaults in the model: with no ramp and no
// NVLS overhead, an 8-GPU NVLS all_reduce of 1 GiB takes the link latency
// 1 µs plus 1.125·2^30 B / 315.18 GB/s = 3.8326 ms (collective_test.go's
// usable NVLS bandwidth).
func TestCollectiveTuningReplacesDefaults(t *testing.T) {
	sys := dgxH100(1)
	sys.Topology.Collectives = tuningOf(0, 1<<20, 0, 1<<20, 0, 0)
	e := mustCollective(t, sys, commcount.AllReduce, firstRanks(8), 1<<30, CollectiveOptions{Algo: "nvls"})
	if !within(e.TimeS, 1e-6+1.125*float64(1<<30)/nvlsUsable, 1e-9) {
		t.Errorf("tuned nvls 1 GiB: %.6g s, want %.6g", e.TimeS, 1e-6+1.125*float64(1<<30)/nvlsUsable)
	}
}

// A config's [topology.collectives] reaches the estimate: the TP=8 decode
// step's all-reduces take longer with a 1 ms Simple ramp and a 100 µs NVLS
// overhead per GPU than with the defaults.
func TestConfigTuningReachesEstimate(t *testing.T) {
	base := modelConfig("llama-2-7b", "h100-sxm", 8, 64, 2048, 16)
	tuned := base + `[topology.collectives]
ramp_simple_s = 1e-3
ramp_simple_half_bytes = 1048576
ramp_ll_s = 1e-3
ramp_ll_half_bytes = 1048576
nvls_base_s = 1e-4
nvls_per_rank_s = 1e-4
`
	a, b := estimateString(t, base), estimateString(t, tuned)
	if !(b.Decode.TPOTS > a.Decode.TPOTS && b.Prefill.TTFTS > a.Prefill.TTFTS) {
		t.Errorf("tuned TPOT %g TTFT %g, defaults %g %g: the section did not reach the model", b.Decode.TPOTS, b.Prefill.TTFTS, a.Decode.TPOTS, a.Prefill.TTFTS)
	}
}
