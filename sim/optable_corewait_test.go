package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func TestMessageSteps(t *testing.T) {
	for _, c := range []struct {
		op   partition.Op
		want int
	}{
		{partition.Op{Kind: partition.AllReduce, Group: []int{0, 1}}, 2},       // ring: 2(g−1)
		{partition.Op{Kind: partition.AllReduce, Group: []int{0, 1, 2, 3}}, 6}, // 2·3
		{partition.Op{Kind: partition.AllGather, Group: []int{0, 1, 2, 3}}, 3}, // g−1
		{partition.Op{Kind: partition.Recv, Peer: 1}, 1},
		{partition.Op{Kind: partition.Send, Peer: 1}, 0}, // does not wait for its receiver
		{partition.Op{Kind: partition.Gemm}, 0},
	} {
		if got := messageSteps(&c.op); got != c.want {
			t.Errorf("%s over %d: %d steps, want %d", c.op.Kind, len(c.op.Group), got, c.want)
		}
	}
}

// TestEstimateChargesCoreWait: tp4-tiny (4 ranks) on a 2-core host with a
// core wait W = 10 µs per message step.
//
// Each pass of tp4-tiny's Program (prefill and every decode step alike)
// holds 17 all-reduces over the 4 ranks (the embedding's, and the
// attention's and the MLP's of each of the 8 layers) and one all-gather of
// the logits over the 4: 17 · 2(4−1) + 1 · (4−1) = 102 + 3 = 105 message
// steps, every one on the critical path (the four ranks run the same
// ops). The compute ops' shared-core stretch is 4/2 = 2 with or without the
// wait (the four ranks compute together; collectives count as idle), so
// the wait adds exactly 105 · 10 µs = 1.05 ms to the prefill (TTFT) and to
// each decode step (TPOT). With the wait measured for 4 cores (no entry
// for this host) or no host cores, nothing changes.
func TestEstimateChargesCoreWait(t *testing.T) {
	const w = 10e-6
	est := func(cores int, waits ...configs.OpTime) *Estimate {
		t.Helper()
		cfg, err := configs.Load("test/tp4-tiny")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Hardware.HostCores = cores
		cfg.Hardware.OpTimes = waits
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e, err := EstimatePlan(plan, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	wait := func(cores int) configs.OpTime {
		return configs.OpTime{Kind: configs.CoreWaitKind, Shape: configs.CoreWaitShape(cores), Size: 1, TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: 4}
	}
	base, charged := est(2), est(2, wait(2))
	const want = 105 * w
	if d := charged.Prefill.TTFTS - base.Prefill.TTFTS; math.Abs(d-want) > 1e-9 {
		t.Errorf("TTFT grew by %.6g s, want %.6g s (105 steps × %g s)", d, want, w)
	}
	if d := charged.Decode.TPOTS - base.Decode.TPOTS; math.Abs(d-want) > 1e-9 {
		t.Errorf("TPOT grew by %.6g s, want %.6g s (105 steps × %g s)", d, want, w)
	}
	for _, c := range []struct {
		name string
		e    *Estimate
	}{{"wait for another core count", est(2, wait(4))}, {"no host cores", est(0, wait(2))}} {
		ref := base
		if c.name == "no host cores" {
			ref = est(0)
		}
		if c.e.Prefill.TTFTS != ref.Prefill.TTFTS || c.e.Decode.TPOTS != ref.Decode.TPOTS {
			t.Errorf("%s: TTFT %g, TPOT %g; want unchanged %g, %g", c.name, c.e.Prefill.TTFTS, c.e.Decode.TPOTS, ref.Prefill.TTFTS, ref.Decode.TPOTS)
		}
	}
}
