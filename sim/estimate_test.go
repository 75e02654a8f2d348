package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func estimate(t *testing.T, name string, edit func(*configs.Config)) *Estimate {
	t.Helper()
	c, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c)
	}
	p, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	e, err := EstimatePlan(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSeedEstimates(t *testing.T) {
	for _, name := range []string{"tp8pp2", "layerwise16"} {
		e := estimate(t, name, nil)
		t.Logf("%s: TTFT %.3f s, TPOT %.3f ms, TPS %.0f, bound %.3f ms, prefill bubble %.3f decode bubble %.3f, bottleneck %s/%s, residency %.3f",
			name, e.Prefill.TTFTS, 1e3*e.Decode.TPOTS, e.Decode.TokensPerS, 1e3*e.Decode.HBMLowerBoundTPOTS,
			e.Prefill.BubbleFraction, e.Decode.BubbleFraction, e.Prefill.Bottleneck, e.Decode.Bottleneck, e.L2.WeightResidency)
		if !(e.Decode.TPOTS >= e.Decode.HBMLowerBoundTPOTS) {
			t.Errorf("%s: TPOT %g below the HBM lower bound %g", name, e.Decode.TPOTS, e.Decode.HBMLowerBoundTPOTS)
		}
		if math.Abs(e.Decode.TokensPerS*e.Decode.TPOTS-128) > 1e-6 {
			t.Errorf("%s: TPS × TPOT = %g, want the batch 128", name, e.Decode.TokensPerS*e.Decode.TPOTS)
		}
	}
}

func TestWholeLayerL2Residency(t *testing.T) {
	// 52,428,800 B (50 MiB) / 536,887,296 B = 0.097653; with 50·10^6 B: 0.093129.
	e := estimate(t, "layerwise16", nil)
	if math.Abs(e.L2.WholeLayerResidency-52428800.0/536887296.0) > 1e-12 || e.L2.WholeLayerResidency > 0.1 {
		t.Errorf("whole-layer residency %g, want 0.097653", e.L2.WholeLayerResidency)
	}
	e = estimate(t, "layerwise16", func(c *configs.Config) { c.Hardware.L2Bytes = 50_000_000 })
	if math.Abs(e.L2.WholeLayerResidency-0.0931297) > 1e-6 {
		t.Errorf("whole-layer residency with 50e6 B: %g, want 0.0931297", e.L2.WholeLayerResidency)
	}
	// Per rank both seed strategies reuse ≈537 MB of weights: tp8pp2 537,001,984 B
	// (8 layer shards with replicated norms), layerwise16 536,887,296 B.
	tp := estimate(t, "tp8pp2", nil)
	if tp.L2.WorkingSetBytes != 537_001_984 || e.L2.WorkingSetBytes != 536_887_296 {
		t.Errorf("working sets %d and %d", tp.L2.WorkingSetBytes, e.L2.WorkingSetBytes)
	}
}

func TestL2ResidencyChangesDecodeTime(t *testing.T) {
	// A tiny model's weights fit L2 entirely: residency 1, and decode GEMMs read
	// their weights from L2, so a GPU with a smaller L2 (residency < 1) cannot be faster.
	fits := estimate(t, "test/tp2pp2-tiny", nil)
	if fits.L2.WeightResidency != 1 {
		t.Fatalf("tiny model residency %g, want 1", fits.L2.WeightResidency)
	}
	small := estimate(t, "test/tp2pp2-tiny", func(c *configs.Config) { c.Hardware.L2Bytes = 1000 })
	if !(small.L2.WeightResidency < 0.01) || small.Decode.TPOTS < fits.Decode.TPOTS {
		t.Fatalf("residency %g TPOT %g vs fitting %g", small.L2.WeightResidency, small.Decode.TPOTS, fits.Decode.TPOTS)
	}
}

func TestSeedShapeOfResults(t *testing.T) {
	tp, lw := estimate(t, "tp8pp2", nil), estimate(t, "layerwise16", nil)
	// One micro-batch through 16 stages: every GPU idles 15/16 of each decode step.
	if math.Abs(lw.Decode.BubbleFraction-15.0/16) > 0.01 || lw.Decode.Bottleneck != BoundBubble {
		t.Errorf("layerwise16 decode bubble %g bottleneck %s, want ≈0.9375 and bubble", lw.Decode.BubbleFraction, lw.Decode.Bottleneck)
	}
	// Both read one layer's worth of KV cache per GPU per step; the pipeline of
	// 16 serial stages makes layer-wise decode slower, not 17 % faster.
	if !(lw.Decode.TPOTS > tp.Decode.TPOTS) {
		t.Errorf("layerwise16 TPOT %g not above tp8pp2 %g", lw.Decode.TPOTS, tp.Decode.TPOTS)
	}
	// TPOT is milliseconds, three orders of magnitude above the seed's 0.078 ms.
	if tp.Decode.TPOTS < 1e-3 || tp.Decode.HBMLowerBoundTPOTS < 1e-3 {
		t.Errorf("tp8pp2 TPOT %g, floor %g: should be ≥ 1 ms", tp.Decode.TPOTS, tp.Decode.HBMLowerBoundTPOTS)
	}
	// The HBM floor: 16 layers of KV read at mean length 9,936 and written for one
	// token: 16 × 128 × (9,936 + 1) × 16,384 B = 333,430,390,784 B; weights beyond
	// L2 per rank (536,887,296 − 52,428,800 = 484,458,496 B for layerwise16) × 16 =
	// 7,751,335,936 B. Sum 341,181,726,720 B / (16 × 3.35e12 B/s) = 6.3653 ms.
	if math.Abs(lw.Decode.HBMLowerBoundTPOTS-341_181_726_720/(16*3.35e12)) > 1e-9 {
		t.Errorf("layerwise16 HBM floor %g", lw.Decode.HBMLowerBoundTPOTS)
	}
	if tp.Comm.CollectiveCallsPerMicrobatch != 32 || tp.Comm.P2PSendsPerMicrobatch != 1 ||
		lw.Comm.CollectiveCallsPerMicrobatch != 0 || lw.Comm.P2PSendsPerMicrobatch != 15 {
		t.Errorf("comm %+v / %+v", tp.Comm, lw.Comm)
	}
}

// Each rank's residency is min(1, usable L2 / its working set), and the
// estimate's working set is the largest rank's.
func TestRankWorkingSets(t *testing.T) {
	for _, name := range []string{"test/tp2pp2-tiny", "tp8pp2", "layerwise16", "test/layermap-tiny"} {
		e := estimate(t, name, nil)
		var largest int64
		for _, r := range e.Ranks.All() {
			largest = max(largest, r.L2WorkingSetBytes)
			if want := math.Min(1, float64(e.L2.UsableL2Bytes)/float64(r.L2WorkingSetBytes)); r.L2Residency != want {
				t.Errorf("%s rank %d: residency %g, usable/working set %g", name, r.Rank, r.L2Residency, want)
			}
		}
		if largest != e.L2.WorkingSetBytes {
			t.Errorf("%s: largest working set %d, estimate %d", name, largest, e.L2.WorkingSetBytes)
		}
	}
	// tp8pp2 rank: 8 layer shards with replicated norms, 537,001,984 B (see TestWholeLayerL2Residency).
	if got := rankRow(t, estimate(t, "tp8pp2", nil), 3).L2WorkingSetBytes; got != 537_001_984 {
		t.Errorf("tp8pp2 rank 3 working set %d", got)
	}
}
