package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func stretchEntry(aloneNs int64, wallS float64, ranks int) configs.OpTime {
	return configs.OpTime{Kind: configs.CoreStretchKind, Shape: "cores=2", Size: aloneNs, TimeS: wallS, TimeMinS: wallS, TimeMaxS: wallS, Samples: 1, Ranks: ranks}
}

// TestBurstStretchFactor: 4 ranks on 2 cores (fair share n/C = 2); a burst
// of 10 µs alone took 10 µs at 4 ranks (m = 1), one of 100 µs took 200 µs
// (m = 2).
//
//	burst alone   wall (log–log)               m                  factor at over 2    at over 1.5
//	10 µs         10 µs                        1                  1                   1
//	100 µs        200 µs                       2                  2                   1.5
//	√1000 µs      √(10·200) = √2000 µs         √2000/√1000 = √2   √2                  1 + 0.5·(√2 − 1)
//	1 µs          (the 10 µs entry's m)        1                  1
//	1 ms          (the 100 µs entry's m)       2                  2
//
// factor = 1 + (over − 1)·min(1, (m − 1)/(2 − 1)); over 1 is never
// stretched.
func TestBurstStretchFactor(t *testing.T) {
	cfg, err := configs.Load("test/tp2-dp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tab := NewOpTable([]configs.OpTime{stretchEntry(10_000, 10e-6, 4), stretchEntry(100_000, 200e-6, 4)})
	bs := newBurstStretch(tab, plan, 2)
	if bs == nil {
		t.Fatal("no burst stretch from a table with two entries at cores=2")
	}
	for _, c := range []struct{ alone, over, want float64 }{
		{10e-6, 2, 1}, {100e-6, 2, 2}, {100e-6, 1.5, 1.5},
		{math.Sqrt(1000) * 1e-6, 2, math.Sqrt2}, {math.Sqrt(1000) * 1e-6, 1.5, 1 + 0.5*(math.Sqrt2-1)},
		{1e-6, 2, 1}, {1e-3, 2, 2}, {100e-6, 1, 1},
	} {
		if got := bs.factor(c.alone, c.over); math.Abs(got-c.want) > 1e-4 { // the size is a whole ns: √1000 µs is 31 623 ns
			t.Errorf("burst %g s alone at fair share %g: factor %.6g, want %.6g", c.alone, c.over, got, c.want)
		}
	}
	if newBurstStretch(tab, plan, 4) != nil {
		t.Error("4 ranks on 4 cores: a burst stretch, want none")
	}
	if newBurstStretch(NewOpTable(nil), plan, 2) != nil {
		t.Error("no entries: a burst stretch, want none")
	}
}

// TestEstimateBurstStretch: tp4-tiny (4 ranks, computing together) on a
// 2-core host, whose compute ops the fair share stretches by 4/2 = 2
// (TestEstimateChargesCoreWait). With a measured stretch m at every burst
// (one entry: the nearest outside holds everywhere) each compute op is
// stretched 1 + (2 − 1)(m − 1) = m, the collectives unchanged, so with
// T0 the estimate on no shared cores and T2 the fair share's,
//
//	T(m) = T0 + (m − 1)·(T2 − T0):  m = 1 → T0, m = 2 → T2, m = 1.5 → (T0 + T2)/2.
//
// The core wait's share is reckoned from the fair share (2 = n/C: all of
// W), so W = 10 µs adds 105 message steps · W = 1.05 ms at m = 1 as at the
// fair share.
func TestEstimateBurstStretch(t *testing.T) {
	est := func(cores int, times ...configs.OpTime) *Estimate {
		return estimateOnCores(t, "test/tp4-tiny", cores, times...)
	}
	t0, t2 := est(0), est(2)
	if !(t2.Prefill.TTFTS > t0.Prefill.TTFTS) {
		t.Fatalf("fair share TTFT %g not above unshared %g", t2.Prefill.TTFTS, t0.Prefill.TTFTS)
	}
	for _, m := range []float64{1, 1.5, 2} {
		e := est(2, stretchEntry(50_000, m*50e-6, 4))
		for _, c := range []struct {
			name        string
			got, lo, hi float64
		}{{"TTFT", e.Prefill.TTFTS, t0.Prefill.TTFTS, t2.Prefill.TTFTS}, {"TPOT", e.Decode.TPOTS, t0.Decode.TPOTS, t2.Decode.TPOTS}} {
			want := c.lo + (m-1)*(c.hi-c.lo)
			if math.Abs(c.got-want) > 1e-9*want {
				t.Errorf("m = %g: %s %.9g s, want %.9g s", m, c.name, c.got, want)
			}
		}
	}
	const w = 10e-6
	wait := configs.OpTime{Kind: configs.CoreWaitKind, Shape: "cores=2", Size: 1, TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: 4}
	base, charged := est(2, stretchEntry(50_000, 50e-6, 4)), est(2, stretchEntry(50_000, 50e-6, 4), wait)
	if d := charged.Decode.TPOTS - base.Decode.TPOTS; math.Abs(d-105*w) > 1e-9 {
		t.Errorf("unstretched bursts: the core wait adds %.6g s to TPOT, want %.6g s (105 steps × W)", d, 105*w)
	}
}

// TestSendCall: pp4-tiny with one micro-batch (each stage: receive,
// compute, send; the last stage samples its first token, then sends the
// tokens to stage 0) and a send_call entry of 10 µs at 4 B and at 4 MiB
// (log–log between them: 10 µs at every size in between). Every prefill
// send's slice grows by exactly 10 µs (launch + the call) and its message
// arrives when it did (the one-way time from the call's start), so every
// stage computes when it did and TTFT — the last stage's first token,
// before its tokens' send — is unchanged; without the entry, a send is
// its launch alone.
func TestSendCall(t *testing.T) {
	est := func(times ...configs.OpTime) *Estimate {
		t.Helper()
		cfg, err := configs.Load("test/pp4-tiny")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Parallel.Microbatches = 1
		cfg.Hardware.OpTimes = times
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e, err := EstimatePlan(plan, Options{EveryRank: true})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	call := func(size int64) configs.OpTime {
		return configs.OpTime{Kind: configs.SendCallKind, Shape: "ranks=2", Size: size, TimeS: 10e-6, TimeMinS: 10e-6, TimeMaxS: 10e-6, Samples: 1, Ranks: 2}
	}
	base, with := est(), est(call(4), call(4<<20))
	sends := func(e *Estimate) []float64 {
		var d []float64
		for _, sl := range e.Timeline.All() {
			if sl.Op.Kind == partition.Send && sl.Phase == partition.Prefill {
				d = append(d, sl.EndS-sl.StartS)
			}
		}
		return d
	}
	b, w := sends(base), sends(with)

	if len(b) == 0 || len(b) != len(w) {
		t.Fatalf("prefill sends: %d without the entry, %d with", len(b), len(w))
	}
	for i := range b {
		if math.Abs(w[i]-b[i]-10e-6) > 1e-12 {
			t.Errorf("send %d: %.6g s with the entry, %.6g s without; want 10 µs more", i, w[i], b[i])
		}
	}
	if math.Abs(with.Prefill.TTFTS-base.Prefill.TTFTS) > 1e-12 {
		t.Errorf("TTFT %.9g s with the send call, %.9g s without; want unchanged (the message leaves at the call's start)", with.Prefill.TTFTS, base.Prefill.TTFTS)
	}
}
