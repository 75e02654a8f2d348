package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestExitLag: tp2pp2-tiny's 4 ranks on 2 cores (full stretch n/C = 2),
// the exit lag with every pair computing L measured at 256 and 4 096 B
// after bursts of 10 and 40 µs, µs:
//
//	           256 B   4 096 B   at 1 024 B (u = ½: the geometric mean)
//	10 µs      20      80        √(20·80)  = 40
//	40 µs      45      180       √(45·180) = 90
//	at 20 µs (v = ½):            √(40·90)  = 60
//
// and beside idle ranks L_idle = 20 µs everywhere. A pair's all-reduce of
// 1 024 B after 20 µs is charged L·share + L_idle·(1 − share), share =
// (s − 1)/(2 − 1): 20 µs at stretch 1, 60 at 2, 40 at 1.5; outside the
// measured bytes and bursts the nearest: 64 B after 5 µs reads (256 B,
// 10 µs) = 20, 1 MiB after 1 ms (4 096 B, 40 µs) = 180 (stretch 2). L
// alone is charged in full (60 at stretch 1). Not priced so: a 4-rank
// group, an all-gather, a profile without the entries, and tp2pp2-tiny on
// 4 cores with the same entries measured there (the ranks do not
// outnumber the cores).
func TestExitLag(t *testing.T) {
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
	e := func(kind string, size, burstNs int64, us float64) configs.OpTime {
		w := us * 1e-6
		return configs.OpTime{Kind: kind, Shape: configs.CoreWaitShape(2), Size: size, Context: burstNs, TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: 4}
	}
	over := []configs.OpTime{e(configs.CoreExitLagKind, 256, 10_000, 20), e(configs.CoreExitLagKind, 4096, 10_000, 80),
		e(configs.CoreExitLagKind, 256, 40_000, 45), e(configs.CoreExitLagKind, 4096, 40_000, 180)}
	var idle []configs.OpTime
	for _, o := range over {
		o.Kind, o.TimeS, o.TimeMinS, o.TimeMaxS = configs.CoreExitLagIdleKind, 20e-6, 20e-6, 20e-6
		idle = append(idle, o)
	}
	both := NewOpTable(append(append([]configs.OpTime(nil), over...), idle...))
	overOnly := NewOpTable(over)
	var onFour []configs.OpTime
	for _, o := range append(append([]configs.OpTime(nil), over...), idle...) {
		o.Shape = configs.CoreWaitShape(4)
		onFour = append(onFour, o)
	}
	ar := func(bytes int64, group ...int) *partition.Op {
		return &partition.Op{Kind: partition.AllReduce, Group: group, Bytes: bytes}
	}
	tp2pp2, fourCores := plan("test/tp2pp2-tiny", 2), plan("test/tp2pp2-tiny", 4)
	for _, c := range []struct {
		name           string
		tab            *OpTable
		plan           *partition.Plan
		op             *partition.Op
		burst, stretch float64
		want           float64 // µs; < 0: not priced so
	}{
		{"stage alone", both, tp2pp2, ar(1024, 0, 1), 20e-6, 1, 20},
		{"all computing", both, tp2pp2, ar(1024, 0, 1), 20e-6, 2, 60},
		{"half", both, tp2pp2, ar(1024, 0, 1), 20e-6, 1.5, 40},
		{"below the measured", both, tp2pp2, ar(64, 0, 1), 5e-6, 2, 20},
		{"above the measured", both, tp2pp2, ar(1 << 20, 0, 1), 1e-3, 2, 180},
		{"L alone", overOnly, tp2pp2, ar(1024, 0, 1), 20e-6, 1, 60},
		{"4-rank group", both, tp2pp2, ar(1024, 0, 1, 2, 3), 20e-6, 2, -1},
		{"all-gather", both, tp2pp2, &partition.Op{Kind: partition.AllGather, Group: []int{0, 1}, Bytes: 1024}, 20e-6, 2, -1},
		{"no entries", NewOpTable([]configs.OpTime{e(configs.CoreWaitKind, 20_000, 0, 30)}), tp2pp2, ar(1024, 0, 1), 20e-6, 2, -1},
		{"ranks fill the cores", NewOpTable(onFour), fourCores, ar(1024, 0, 1), 20e-6, 1, -1},
	} {
		got, ok := exitLagS(c.tab, c.plan, c.op, c.burst, c.stretch)
		if c.want < 0 {
			if ok {
				t.Errorf("%s: priced %.6g s by the exit lag, want not", c.name, got)
			}
			continue
		}
		if !ok || math.Abs(got-c.want*1e-6) > 1e-12 {
			t.Errorf("%s: %.6g s (ok %t), want %.6g µs", c.name, got, ok, c.want)
		}
	}
}

// TestEstimateExitLag: tp2pp2-tiny with one micro-batch on 2 cores, its
// stages computing one at a time (stretch 1, share 0: L_idle alone). Every
// 2-rank all_reduce has a table time of 30 µs (entries at 1 B and 1 MiB,
// 30 µs both: constant between), the wait beside idle ranks W_idle is
// 10 µs per message step. A pass's critical path holds 17 all-reduces over
// a pair (stage 0's embedding and 2 per layer of 4, stage 1's 2 per layer
// of 4) and stage 1's all-gather of the logits (1 step). Without the exit
// lag each all-reduce costs 30 + 2·10 = 50 µs; with L_idle = 100 µs it
// costs 100 µs from its last arrival instead, and the all-gather keeps
// its 10 µs: TTFT and TPOT (each decode step runs the same chain) grow by
// 17 × (100 − 50) = 850 µs.
func TestEstimateExitLag(t *testing.T) {
	est := func(times ...configs.OpTime) *Estimate {
		return estimateOnCoresWith(t, "test/tp2pp2-tiny", 2, 1, times...)
	}
	at := func(kind, shape string, size, context int64, s float64) configs.OpTime {
		return configs.OpTime{Kind: kind, Shape: shape, Size: size, Context: context, TimeS: s, TimeMinS: s, TimeMaxS: s, Samples: 1, Ranks: 4}
	}
	base := []configs.OpTime{at("all_reduce", "ranks=2", 1, 0, 30e-6), at("all_reduce", "ranks=2", 1<<20, 0, 30e-6),
		at(configs.CoreWaitIdleKind, configs.CoreWaitShape(2), 20_000, 0, 10e-6)}
	without := est(base...)
	with := est(append(base, at(configs.CoreExitLagIdleKind, configs.CoreWaitShape(2), 4096, 20_000, 100e-6))...)
	const want = 17 * 50e-6
	if d := with.Prefill.TTFTS - without.Prefill.TTFTS; math.Abs(d-want) > 1e-9 {
		t.Errorf("TTFT grew by %.6g s, want %.6g s (17 all-reduces × 50 µs)", d, want)
	}
	if d := with.Decode.TPOTS - without.Decode.TPOTS; math.Abs(d-want) > 1e-9 {
		t.Errorf("TPOT grew by %.6g s, want %.6g s (17 all-reduces × 50 µs)", d, want)
	}
}
