package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestCoreWaitBesideIdle: tp2pp2-tiny's 4 ranks on 2 cores (full stretch
// n/C = 2), a 2-rank all-reduce (2 message steps), the core wait W = 30 µs
// and the wait beside idle ranks W_idle = 10 µs per step after the same
// burst. Per step W·share + W_idle·(1 − share), share = (s − 1)/(2 − 1):
//
//	stretch 1 (the stage's pair computed alone): 2 · 10 = 20 µs
//	stretch 2 (all four computed):               2 · 30 = 60 µs
//	stretch 1.5:                                 2 · (15 + 5) = 40 µs
//
// With W_idle alone (no core wait) at stretch 1.5: 2 · 0.5 · 10 = 10 µs;
// with W alone, as before: 2 · 0.5 · 30 = 30 µs. tp4-tiny on 4 cores (the
// ranks fill them, share 1) meets W alone: 6 steps · 30 = 180 µs.
func TestCoreWaitBesideIdle(t *testing.T) {
	plan := func(name string, cores int) *partition.Plan {
		cfg, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Hardware.HostCores = cores
		p, err := partition.NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	e := func(kind string, cores int, w float64) configs.OpTime {
		return configs.OpTime{Kind: kind, Shape: configs.CoreWaitShape(cores), Size: 20_000, TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: 4}
	}
	both := NewOpTable([]configs.OpTime{e(configs.CoreWaitKind, 2, 30e-6), e(configs.CoreWaitIdleKind, 2, 10e-6)})
	idleOnly := NewOpTable([]configs.OpTime{e(configs.CoreWaitIdleKind, 2, 10e-6)})
	waitOnly := NewOpTable([]configs.OpTime{e(configs.CoreWaitKind, 2, 30e-6)})
	pair := &partition.Op{Kind: partition.AllReduce, Group: []int{0, 1}}
	quad := &partition.Op{Kind: partition.AllReduce, Group: []int{0, 1, 2, 3}}
	tp2pp2, tp4 := plan("test/tp2pp2-tiny", 2), plan("test/tp4-tiny", 4)
	for _, c := range []struct {
		name    string
		tab     *OpTable
		plan    *partition.Plan
		op      *partition.Op
		stretch float64
		want    float64
	}{
		{"stage alone", both, tp2pp2, pair, 1, 20e-6},
		{"all computing", both, tp2pp2, pair, 2, 60e-6},
		{"half", both, tp2pp2, pair, 1.5, 40e-6},
		{"idle entry only", idleOnly, tp2pp2, pair, 1.5, 10e-6},
		{"core wait only", waitOnly, tp2pp2, pair, 1.5, 30e-6},
		{"ranks fill the cores", NewOpTable([]configs.OpTime{e(configs.CoreWaitKind, 4, 30e-6), e(configs.CoreWaitIdleKind, 4, 10e-6)}), tp4, quad, 1, 180e-6},
	} {
		if got := coreWaitS(c.tab, c.plan, c.op, 20e-6, c.stretch); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %.6g s, want %.6g s", c.name, got, c.want)
		}
	}
}

// TestEstimateCoreWaitBesideIdle: tp2pp2-tiny with one micro-batch on 2
// cores: its stages compute one at a time (2 ranks computing, stretch 1,
// share 0), so every collective meets W_idle = 10 µs per message step and
// none of the core wait W = 30 µs. A pass's critical path holds stage 0's
// 9 all-reduces over its pair (the embedding's and 2 for each of its 4
// layers) and stage 1's 8 (its 4 layers) and its all-gather of the logits
// (g − 1 = 1 step): 17 · 2 + 1 = 35 steps, 350 µs on TTFT and on TPOT
// (each decode step runs the same chain). W alone changes nothing.
func TestEstimateCoreWaitBesideIdle(t *testing.T) {
	est := func(times ...configs.OpTime) *Estimate {
		cfg, err := configs.Load("test/tp2pp2-tiny")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Parallel.Microbatches = 1
		cfg.Hardware.HostCores = 2
		cfg.Hardware.OpTimes = times
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
	e := func(kind string, w float64) configs.OpTime {
		return configs.OpTime{Kind: kind, Shape: configs.CoreWaitShape(2), Size: 20_000, TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: 4}
	}
	base := est()
	withW := est(e(configs.CoreWaitKind, 30e-6))
	if withW.Prefill.TTFTS != base.Prefill.TTFTS || withW.Decode.TPOTS != base.Decode.TPOTS {
		t.Errorf("core wait alone: TTFT %g, TPOT %g; want unchanged %g, %g", withW.Prefill.TTFTS, withW.Decode.TPOTS, base.Prefill.TTFTS, base.Decode.TPOTS)
	}
	both := est(e(configs.CoreWaitKind, 30e-6), e(configs.CoreWaitIdleKind, 10e-6))
	const want = 35 * 10e-6
	if d := both.Prefill.TTFTS - base.Prefill.TTFTS; math.Abs(d-want) > 1e-9 {
		t.Errorf("TTFT grew by %.6g s, want %.6g s (35 steps × 10 µs)", d, want)
	}
	if d := both.Decode.TPOTS - base.Decode.TPOTS; math.Abs(d-want) > 1e-9 {
		t.Errorf("TPOT grew by %.6g s, want %.6g s (35 steps × 10 µs)", d, want)
	}
}

// TestBlockedRecvHandOff: a message sent at 100 µs that arrives at
// 110 µs, with the hand-off taken in turns H = 30 µs: the receive returns
// at max(110, 100 + 30) = 130 µs, whatever the burst; one that arrives at
// 140 µs (a long copy) at 140 µs. Without a hand-off: the arrival and the
// receive wait (10 µs here), 120 µs; with neither, 110 µs.
func TestBlockedRecvHandOff(t *testing.T) {
	cfg, err := configs.Load("test/layerwise16-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Hardware.HostCores = 2
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := func(kind string, size int64, ts float64) configs.OpTime {
		return configs.OpTime{Kind: kind, Shape: "cores=2", Size: size, TimeS: ts, TimeMinS: ts, TimeMaxS: ts, Samples: 1, Ranks: 16}
	}
	hand := e(configs.TurnsKind(configs.HandOffKind), 1, 30e-6)
	wait := e(configs.RecvWaitKind, 20_000, 10e-6)
	for _, c := range []struct {
		name             string
		times            []configs.OpTime
		arrival, wantEnd float64
	}{
		{"hand-off after the arrival", []configs.OpTime{hand, wait}, 110e-6, 130e-6},
		{"arrival after the hand-off", []configs.OpTime{hand, wait}, 140e-6, 140e-6},
		{"receive wait alone", []configs.OpTime{wait}, 110e-6, 120e-6},
		{"neither", nil, 110e-6, 110e-6},
	} {
		for _, burst := range []float64{1e-6, 20e-6, 1e-3} {
			if got := blockedRecvEndS(NewOpTable(c.times), plan, 100e-6, c.arrival, burst); math.Abs(got-c.wantEnd) > 1e-12 {
				t.Errorf("%s, after %g s: returns at %.6g s, want %.6g s", c.name, burst, got, c.wantEnd)
			}
		}
	}
}

// TestEstimateHandOff: pp4-tiny with one micro-batch on 2 cores. Every
// receive blocks (one stage computes at a time): the prefill's path to the
// first token holds 3 of them (stages 1, 2 and 3 wait for their
// activations), each decode step 4 (the token back to stage 0 too). With a
// hand-off above every hop's one-way time (the link model's: about 1 µs)
// each of those receives returns the hand-off after its send, so a
// hand-off of 50 µs against one of 30 µs adds 3 · 20 = 60 µs to TTFT and
// 4 · 20 = 80 µs to TPOT; one of 1 ns (below every arrival) changes
// nothing against no entry.
func TestEstimateHandOff(t *testing.T) {
	est := func(times ...configs.OpTime) *Estimate {
		cfg, err := configs.Load("test/pp4-tiny")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Parallel.Microbatches = 1
		cfg.Hardware.HostCores = 2
		cfg.Hardware.OpTimes = times
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
	h := func(ts float64) configs.OpTime {
		return configs.OpTime{Kind: configs.TurnsKind(configs.HandOffKind), Shape: "cores=2", Size: 1, TimeS: ts, TimeMinS: ts, TimeMaxS: ts, Samples: 1, Ranks: 4}
	}
	h30, h50 := est(h(30e-6)), est(h(50e-6))
	if d := h50.Prefill.TTFTS - h30.Prefill.TTFTS; math.Abs(d-60e-6) > 1e-9 {
		t.Errorf("TTFT grew by %.6g s from a 30 to a 50 µs hand-off, want 60 µs (3 blocked receives × 20 µs)", d)
	}
	if d := h50.Decode.TPOTS - h30.Decode.TPOTS; math.Abs(d-80e-6) > 1e-9 {
		t.Errorf("TPOT grew by %.6g s from a 30 to a 50 µs hand-off, want 80 µs (4 blocked receives × 20 µs)", d)
	}
	base, tiny := est(), est(h(1e-9))
	if tiny.Prefill.TTFTS != base.Prefill.TTFTS || tiny.Decode.TPOTS != base.Decode.TPOTS {
		t.Errorf("a 1 ns hand-off: TTFT %g, TPOT %g; want unchanged %g, %g", tiny.Prefill.TTFTS, tiny.Decode.TPOTS, base.Prefill.TTFTS, base.Decode.TPOTS)
	}
}
