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
		{partition.Op{Kind: partition.Recv, Peer: 1}, 0},                       // charged the receive wait instead
		{partition.Op{Kind: partition.Send, Peer: 1}, 0},                       // does not wait for its receiver
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
// each decode step (TPOT); on a 4-core host, where the 4 ranks fill the
// cores and nothing is stretched, a wait measured there (cores=4) adds the
// same. With the wait measured for 4 cores (no entry for this host) or no
// host cores, nothing changes.
func TestEstimateChargesCoreWait(t *testing.T) {
	const w = 10e-6
	est := func(cores int, waits ...configs.OpTime) *Estimate {
		return estimateOnCores(t, "test/tp4-tiny", cores, waits...)
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
	// With the 4 ranks filling 4 cores (nothing stretched) a wait measured
	// there is the partners' wake-up, met in full: 105 · W again.
	if d := est(4, wait(4)).Decode.TPOTS - est(4).Decode.TPOTS; math.Abs(d-want) > 1e-9 {
		t.Errorf("4 ranks on 4 cores: TPOT grew by %.6g s, want %.6g s (105 steps × %g s)", d, want, w)
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

// TestCoreWaitByBurst: W measured after 10 µs of compute (20 µs per step)
// and after 1 ms (2 µs). After 100 µs: halfway on a log scale,
// u = ln(100/10)/ln(1000/10) = 1/2 → 20^(1/2)·2^(1/2) = √40 = 6.3246 µs per
// step; a 2-rank all-reduce (2 steps) is charged 12.649 µs when its burst
// ran stretched 2× (tp2-dp2-tiny's 4 ranks all computing on 2 cores, as in
// the measurement: coreWaitShare 1). After 1 µs
// (below the measured bursts) the 10 µs entry holds, after 5 ms the 1 ms
// one. No host cores: nothing.
func TestCoreWaitByBurst(t *testing.T) {
	cfg, err := configs.Load("test/tp2-dp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Hardware.HostCores = 2
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := func(ns int64, w float64) configs.OpTime {
		return configs.OpTime{Kind: configs.CoreWaitKind, Shape: "cores=2", Size: ns, TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: 4}
	}
	tab := NewOpTable([]configs.OpTime{e(10_000, 20e-6), e(1_000_000, 2e-6)})
	ar := &partition.Op{Kind: partition.AllReduce, Group: []int{0, 1}}
	for _, c := range []struct {
		burstS, want float64
	}{{100e-6, 2 * math.Sqrt(40) * 1e-6}, {1e-6, 2 * 20e-6}, {10e-6, 2 * 20e-6}, {5e-3, 2 * 2e-6}} {
		if got := coreWaitS(tab, plan, ar, c.burstS, 2); math.Abs(got-c.want) > 1e-12 { // stretch 2 = 4 ranks / 2 cores: all of W
			t.Errorf("after %g s of compute: %.6g s, want %.6g s", c.burstS, got, c.want)
		}
	}
	cfg.Hardware.HostCores = 0
	if got := coreWaitS(tab, plan, ar, 100e-6, 2); got != 0 {
		t.Errorf("no host cores: %g s, want 0", got)
	}
}

// TestCoreWaitShare: the measured wait holds where the burst ran at the
// measurement's stretch n/C and none of it where the rank had a core to
// itself; in between, linearly in the stretch:
//
//	4 ranks, 2 cores: full stretch 2; stretch 1.5 → (1.5−1)/(2−1) = 0.5
//	16 ranks, 2 cores: full stretch 8; stretch 3 → 2/7; 1 → 0; 9 → 1 (clamped)
//	2 ranks, 2 cores: nothing outnumbered; W (measured at n = C) is the
//	partner's wake-up after its compute, met in full → 1
func TestCoreWaitShare(t *testing.T) {
	for _, c := range []struct {
		stretch      float64
		ranks, cores int
		want         float64
	}{{1.5, 4, 2, 0.5}, {2, 4, 2, 1}, {3, 16, 2, 2.0 / 7}, {1, 16, 2, 0}, {9, 16, 2, 1}, {1, 2, 2, 1}} {
		if got := coreWaitShare(c.stretch, c.ranks, c.cores); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("stretch %g, %d ranks, %d cores: %g, want %g", c.stretch, c.ranks, c.cores, got, c.want)
		}
	}
}

// A pipeline (pp4-tiny, 4 stages, one micro-batch: the stages compute one
// at a time) has no collective: the core wait changes nothing. Its
// receives block, and a receive wait R = 50 µs is charged to each that
// did: a decode step's message goes 0 → 1 → 2 → 3 and its token back to 0,
// 4 blocked receives in a row, TPOT + 4R = +200 µs; the prefill's reaches
// the last stage after 3, TTFT + 3R = +150 µs.
func TestCoreWaitSparesAPipeline(t *testing.T) {
	est := func(times ...configs.OpTime) *Estimate {
		return estimateOnCoresWith(t, "test/pp4-tiny", 2, 1, times...) // one stage computes at a time
	}
	w := configs.OpTime{Kind: configs.CoreWaitKind, Shape: "cores=2", Size: 1, TimeS: 1e-3, TimeMinS: 1e-3, TimeMaxS: 1e-3, Samples: 1, Ranks: 4}
	base, charged := est(), est(w)
	if charged.Prefill.TTFTS != base.Prefill.TTFTS || charged.Decode.TPOTS != base.Decode.TPOTS {
		t.Errorf("core wait: TTFT %g → %g, TPOT %g → %g: want unchanged", base.Prefill.TTFTS, charged.Prefill.TTFTS, base.Decode.TPOTS, charged.Decode.TPOTS)
	}
	const r = 50e-6
	rw := configs.OpTime{Kind: configs.RecvWaitKind, Shape: "cores=2", Size: 1, TimeS: r, TimeMinS: r, TimeMaxS: r, Samples: 1, Ranks: 4}
	recv := est(rw)
	if d := recv.Prefill.TTFTS - base.Prefill.TTFTS; math.Abs(d-3*r) > 1e-9 {
		t.Errorf("receive wait: TTFT grew by %.6g s, want 3R = %.6g s", d, 3*r)
	}
	if d := recv.Decode.TPOTS - base.Decode.TPOTS; math.Abs(d-4*r) > 1e-9 {
		t.Errorf("receive wait: TPOT grew by %.6g s, want 4R = %.6g s", d, 4*r)
	}
}

// The receive wait by burst: measured 10 µs after a 10 µs burst and 40 µs
// after 100 µs, on 2 cores. Between them log–log: after √(10·100) ≈
// 31.623 µs (u = 1/2) √(10·40) = 20 µs; outside them the nearest: 10 µs
// after 1 µs, 40 µs after 1 ms. A profile of one burst (size 1, an older
// partbench's) holds at every burst; a host of other cores or none gets
// nothing.
func TestRecvWaitByBurst(t *testing.T) {
	e := func(size int64, ts float64) configs.OpTime {
		return configs.OpTime{Kind: configs.RecvWaitKind, Shape: "cores=2", Size: size, TimeS: ts, TimeMinS: ts, TimeMaxS: ts, Samples: 1, Ranks: 16}
	}
	plan := func(cores int) *partition.Plan { return coresPlan(t, "test/layerwise16-tiny", cores, nil, nil) }
	two := plan(2)
	tab := NewOpTable([]configs.OpTime{e(10_000, 10e-6), e(100_000, 40e-6)})
	for _, c := range []struct{ burstS, want float64 }{
		{10e-6, 10e-6}, {100e-6, 40e-6}, {math.Sqrt(10e-6 * 100e-6), 20e-6}, {1e-6, 10e-6}, {1e-3, 40e-6}, {0, 10e-6},
	} {
		if got := recvWaitS(tab, two, c.burstS); math.Abs(got-c.want) > 1e-3*c.want {
			t.Errorf("after %.4g s: %.6g s, want %.6g s", c.burstS, got, c.want)
		}
	}
	old := NewOpTable([]configs.OpTime{e(1, 15e-6)})
	for _, b := range []float64{0, 25e-6, 1e-3} {
		if got := recvWaitS(old, two, b); got != 15e-6 {
			t.Errorf("one burst, after %g s: %g s, want 15 µs", b, got)
		}
	}
	if got := recvWaitS(tab, plan(4), 10e-6); got != 0 {
		t.Errorf("4 cores: %g s, want 0 (measured on 2)", got)
	}
	if got := recvWaitS(tab, plan(0), 10e-6); got != 0 {
		t.Errorf("no host cores: %g s, want 0", got)
	}
}
