package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestShareFactors: 2 cores.
//
//	rank 0: a gemm over [0, 2)           ranks 1–3: a gemm over [0, 1) each
//	busy: 4 ranks in [0, 1), 1 in [1, 2)
//	rank 0's gemm: mean busy (4·1 + 1·1)/2 = 2.5 → 2.5/2 = 1.25
//	ranks 1–3: busy 4 → 4/2 = 2
//	an all_reduce [2, 3) on rank 0 waits on a socket: no factor, no load
//	rank 1's norm over [2, 3) alone: busy 1 → 1 (no stretch)
func TestShareFactors(t *testing.T) {
	gemm := func(name string) *partition.Op { return &partition.Op{Kind: partition.Gemm, Name: name} }
	norm := &partition.Op{Kind: partition.Norm, Name: "n"}
	ar := &partition.Op{Kind: partition.AllReduce, Name: "ar"}
	tl := &Timeline{Slices: []Slice{
		{Rank: 0, Phase: partition.Prefill, Op: gemm("g"), StartS: 0, EndS: 2},
		{Rank: 1, Phase: partition.Prefill, Op: gemm("g"), StartS: 0, EndS: 1},
		{Rank: 2, Phase: partition.Prefill, Op: gemm("g"), StartS: 0, EndS: 1},
		{Rank: 3, Phase: partition.Prefill, Op: gemm("g"), StartS: 0, EndS: 1},
		{Rank: 0, Phase: partition.Prefill, Op: ar, StartS: 2, EndS: 3},
		{Rank: 1, Phase: partition.Prefill, Op: norm, StartS: 2, EndS: 3},
	}}
	s := shareFactors(tl, 1, 2, false, nil, nil)
	for _, c := range []struct {
		rank int
		op   *partition.Op
		want float64
	}{{0, gemm("g"), 1.25}, {1, gemm("g"), 2}, {3, gemm("g"), 2}, {1, norm, 1}, {0, ar, 1}} {
		if got := s.factor(c.rank, partition.Prefill, c.op); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("rank %d %s: %g, want %g", c.rank, c.op.Name, got, c.want)
		}
	}
	// A per-stage timeline's slice stands for its TP peers, and replicas
	// double again: rank 1's lone norm counts 2 × 2 = 4 ranks → 2.
	tl.PerStage, tl.TP = true, 2
	if got := shareFactors(tl, 2, 2, false, nil, nil).factor(1, partition.Prefill, norm); got != 2 {
		t.Errorf("per stage, TP 2, 2 replicas: norm factor %g, want 2", got)
	}
	// Decode: the factor of an op is its mean over steps: steps 0 and 1 at
	// busy 4 and 2 on 2 cores → (2 + 1)/2 = 1.5.
	d := &Timeline{}
	for r := 0; r < 4; r++ {
		d.Slices = append(d.Slices, Slice{Rank: r, Phase: partition.Decode, Step: 0, Op: gemm("g"), StartS: 0, EndS: 1})
	}
	for r := 0; r < 2; r++ {
		d.Slices = append(d.Slices, Slice{Rank: r, Phase: partition.Decode, Step: 1, Op: gemm("g"), StartS: 5, EndS: 6})
	}
	if got := shareFactors(d, 1, 2, false, nil, nil).factor(0, partition.Decode, gemm("g")); got != 1.5 {
		t.Errorf("decode mean over steps: %g, want 1.5", got)
	}
}

// A 4-rank config on a 2-core host: sharing stretches its compute, so TTFT
// and TPOT grow; with as many cores as ranks nothing changes.
func TestEstimateSharesCores(t *testing.T) {
	est := func(cores int) *Estimate { return estimateOnCores(t, "test/tp2pp2-tiny", cores) }
	none, four, two := est(0), est(4), est(2)
	if four.Prefill.TTFTS != none.Prefill.TTFTS || four.Decode.TPOTS != none.Decode.TPOTS {
		t.Errorf("4 cores for 4 ranks changed the estimate: TTFT %g → %g, TPOT %g → %g", none.Prefill.TTFTS, four.Prefill.TTFTS, none.Decode.TPOTS, four.Decode.TPOTS)
	}
	if !(two.Prefill.TTFTS > none.Prefill.TTFTS) || !(two.Decode.TPOTS > none.Decode.TPOTS) {
		t.Errorf("2 cores for 4 ranks: TTFT %g (alone %g), TPOT %g (alone %g); want both longer", two.Prefill.TTFTS, none.Prefill.TTFTS, two.Decode.TPOTS, none.Decode.TPOTS)
	}
}

// estimateOnCores is the estimate of the named config on a host of cores
// CPU cores (0: none stated) with op-time entries times.
func estimateOnCores(t *testing.T, name string, cores int, times ...configs.OpTime) *Estimate {
	t.Helper()
	return estimateOnCoresWith(t, name, cores, 0, times...)
}

// estimateOnCoresWith is estimateOnCores with the config's micro-batches
// set to microbatches (0: the config's).
func estimateOnCoresWith(t *testing.T, name string, cores, microbatches int, times ...configs.OpTime) *Estimate {
	t.Helper()
	return estimateOnCoresOpts(t, name, cores, microbatches, Options{}, times...)
}

// estimateOnCoresOpts is estimateOnCoresWith, estimated with opts.
func estimateOnCoresOpts(t *testing.T, name string, cores, microbatches int, opts Options, times ...configs.OpTime) *Estimate {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if microbatches > 0 {
		cfg.Parallel.Microbatches = microbatches
	}
	cfg.Hardware.HostCores = cores
	cfg.Hardware.OpTimes = times
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := EstimatePlan(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
