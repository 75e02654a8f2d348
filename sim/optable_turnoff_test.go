package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestTurnOffS: layerwise16-tiny's 16 ranks on 2 cores (n/C = 8), a turn
// off the core of 2 µs after 10 µs on it and 200 µs after 1 ms (a power
// law between, as every kind but partition's compute kinds: at the
// geometric middle 100 µs, √(2 · 200) = 20 µs), each times
// 1 − clamp((stretch − 1)/(8 − 1), 0, 1):
//
//	turn      stretch   share   T_off · (1 − share)
//	100 µs    1         0       20 µs
//	100 µs    4.5       0.5     10 µs
//	100 µs    8         1       0
//	10 µs     1         0       2 µs
//	1 µs      1         0       2 µs   (the nearest measured turn)
//	5 ms      1         0       200 µs
//	0         1         —       0      (no compute: no turn)
//
// and nothing without an entry, on a host of other cores, or at no more
// ranks than cores (pp4-tiny on 4, an entry at cores=4: share 1).
func TestTurnOffS(t *testing.T) {
	e := func(size int64, ts float64, ranks int) configs.OpTime {
		return configs.OpTime{Kind: configs.TurnOffKind, Shape: "cores=2", Size: size, TimeS: ts, TimeMinS: ts, TimeMaxS: ts, Samples: 1, Ranks: ranks}
	}
	two := coresPlan(t, "test/layerwise16-tiny", 2, nil, nil)
	tab := NewOpTable([]configs.OpTime{e(10_000, 2e-6, 16), e(1_000_000, 200e-6, 16)})
	for _, c := range []struct{ turn, stretch, want float64 }{
		{100e-6, 1, 20e-6}, {100e-6, 4.5, 10e-6}, {100e-6, 8, 0}, {10e-6, 1, 2e-6}, {1e-6, 1, 2e-6}, {5e-3, 1, 200e-6}, {0, 1, 0},
	} {
		if got := turnOffS(tab, two, c.turn, c.stretch); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("turn %g s, stretch %g: %.6g s, want %.6g s", c.turn, c.stretch, got, c.want)
		}
	}
	if got := turnOffS(NewOpTable([]configs.OpTime{{Kind: configs.RecvWaitTurnsKind, Shape: "cores=2", Size: 10_000, TimeS: 1e-6, TimeMinS: 1e-6, TimeMaxS: 1e-6, Samples: 1, Ranks: 16}}), two, 100e-6, 1); got != 0 {
		t.Errorf("no turn_off entry: %g s, want 0", got)
	}
	if got := turnOffS(tab, coresPlan(t, "test/layerwise16-tiny", 4, nil, nil), 100e-6, 1); got != 0 {
		t.Errorf("4 cores: %g s, want 0 (measured on 2)", got)
	}
	four := NewOpTable([]configs.OpTime{{Kind: configs.TurnOffKind, Shape: "cores=4", Size: 10_000, TimeS: 2e-6, TimeMinS: 2e-6, TimeMaxS: 2e-6, Samples: 1, Ranks: 4}})
	if got := turnOffS(four, coresPlan(t, "test/pp4-tiny", 4, nil, nil), 100e-6, 1); got != 0 {
		t.Errorf("pp4-tiny on 4 cores: %g s, want 0 (every rank has a core)", got)
	}
}

// TestEstimateTurnOff: pp4-tiny with one micro-batch on a 2-core host,
// every compute op 3 µs at once and 7 µs in turns (so its stages compute
// one at a time, fair share 1: share 0), with and without a turn_off
// entry of 5 µs (one size: it holds at every turn). With it, every send
// that ends a turn of compute — the rank's slice before it a compute op —
// waits 5 µs before its launch (its WaitS, its slice 5 µs longer), once
// per turn; every other slice lasts as long as without the entry (a
// receive aside: it waits for the stages upstream), and every send
// without compute before it waits nothing. The estimate's TTFT is the
// later by 5 µs per send on the prefill's chain to the last stage's
// first token: stages 0→1, 1→2, 2→3.
//
// tp4-tiny with the entry: no send, no term (TTFT and TPOT as without).
func TestEstimateTurnOff(t *testing.T) {
	one := func(c *configs.Config) { c.Parallel.Microbatches = 1 }
	const off = 5e-6
	entry := configs.OpTime{Kind: configs.TurnOffKind, Shape: "cores=2", Size: 1, TimeS: off, TimeMinS: off, TimeMaxS: off, Samples: 1, Ranks: 4}
	pp := func(withOff bool) *Estimate {
		ts := flatTable(t, "test/pp4-tiny", 3e-6, 7e-6, one)
		if withOff {
			ts = append(ts, entry)
		}
		e, err := EstimatePlan(coresPlan(t, "test/pp4-tiny", 2, ts, one), Options{EveryRank: true})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := pp(false), pp(true)
	as, bs := a.Timeline.List(), b.Timeline.List()
	if len(as) != len(bs) || len(as) == 0 {
		t.Fatalf("%d slices without the entry, %d with", len(as), len(bs))
	}
	turns := map[partition.Phase]int{}
	for i := range bs {
		sa, sb := &as[i], &bs[i]
		if sb.Op.Kind == partition.Recv {
			continue
		}
		want := 0.0
		if sb.Op.Kind == partition.Send && i > 0 && bs[i-1].Rank == sb.Rank && isCompute(bs[i-1].Op.Kind) {
			want = off
			turns[sb.Phase]++
		}
		if d := (sb.EndS - sb.StartS) - (sa.EndS - sa.StartS); math.Abs(d-want) > 1e-12 || math.Abs(sb.WaitS-want) > 1e-12 || sa.WaitS != 0 && sa.Op.Kind == partition.Send {
			t.Errorf("rank %d %s %s: %.6g s longer with the entry, wait %.6g s (%.6g without), want %.6g", sb.Rank, sb.Phase, sb.Op.Name, d, sb.WaitS, sa.WaitS, want)
		}
	}
	// pp4-tiny's four stages each end one turn per prefill and per decode
	// step in a send (stage 3's to stage 0 the sampled token).
	if turns[partition.Prefill] != 4 {
		t.Errorf("%d prefill turns priced, want 4 (one per stage)", turns[partition.Prefill])
	}
	if turns[partition.Decode] == 0 || turns[partition.Decode]%4 != 0 {
		t.Errorf("%d decode turns priced, want 4 per decode step", turns[partition.Decode])
	}
	if d := b.Prefill.TTFTS - a.Prefill.TTFTS; math.Abs(d-3*off) > 1e-12 {
		t.Errorf("pp4-tiny TTFT %.6g s later with the entry, want 3 × 5 µs", d)
	}
	tp := func(withOff bool) *Estimate {
		ts := flatTable(t, "test/tp4-tiny", 3e-6, 7e-6, nil)
		if withOff {
			ts = append(ts, entry)
		}
		return estimateOnCores(t, "test/tp4-tiny", 2, ts...)
	}
	x, y := tp(false), tp(true)
	if x.Prefill.TTFTS != y.Prefill.TTFTS || x.Decode.TPOTS != y.Decode.TPOTS {
		t.Errorf("tp4-tiny: TTFT %g / TPOT %g s with the entry, %g / %g s without; want the same (no send)", y.Prefill.TTFTS, y.Decode.TPOTS, x.Prefill.TTFTS, x.Decode.TPOTS)
	}
}
