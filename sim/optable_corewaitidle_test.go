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
	plan := func(name string, cores int) *partition.Plan { return coresPlan(t, name, cores, nil, nil) }
	e := func(kind string, cores int, w float64) configs.OpTime {
		return opEntry(kind, configs.CoreWaitShape(cores), 20_000, 0, w, 4)
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

// TestEstimateCoreWaitBesideIdle: tp2pp2-tiny with one micro-batch on 3
// cores (4 ranks, not twice the cores: left to the scheduler, counted
// host-wide): its stages compute one at a time (2 ranks computing on 3
// cores, stretch 1, share 0), so every collective meets W_idle = 10 µs per
// message step and none of the core wait W = 30 µs. A pass's critical path
// holds stage 0's 9 all-reduces over its pair (the embedding's and 2 for
// each of its 4 layers) and stage 1's 8 (its 4 layers) and its all-gather
// of the logits (g − 1 = 1 step): 17 · 2 + 1 = 35 steps, 350 µs on TTFT
// and on TPOT (each decode step runs the same chain). W alone changes
// nothing.
//
// On 2 cores the 4 ranks are bound two to a CPU (pairedOnCPUs), each
// stage's pair on a CPU of its own: the lone stage's 2 ranks count 2 on
// their one CPU (share 1), so every step meets W = 30 µs and none of
// W_idle, and the partner behind beside another stage (optable_late.go)
// adds one W per collective: (35 + 18) · 30 µs = 1.59 ms on TTFT and on
// TPOT, with or without the W_idle entry. Priced unbound (Options.Unbound:
// `run --bind-to none`), the 2 cores are counted host-wide as the 3 are:
// a lone stage's 2 ranks on 2 cores, stretch 1, share 0: 35 · 10 µs with
// W_idle, nothing with W alone.
func TestEstimateCoreWaitBesideIdle(t *testing.T) {
	for _, c := range []struct {
		cores         int
		unbound       bool
		wAlone, wBoth float64 // growth with W alone, with W and W_idle
	}{
		{3, false, 0, 35 * 10e-6},
		{2, false, 53 * 30e-6, 53 * 30e-6},
		{2, true, 0, 35 * 10e-6},
	} {
		est := func(times ...configs.OpTime) *Estimate {
			return estimateOnCoresOpts(t, "test/tp2pp2-tiny", c.cores, 1, Options{Unbound: c.unbound}, times...)
		}
		e := func(kind string, w float64) configs.OpTime {
			return opEntry(kind, configs.CoreWaitShape(c.cores), 20_000, 0, w, 4)
		}
		base := est()
		for _, v := range []struct {
			name  string
			times []configs.OpTime
			want  float64
		}{
			{"W alone", []configs.OpTime{e(configs.CoreWaitKind, 30e-6)}, c.wAlone},
			{"W and W_idle", []configs.OpTime{e(configs.CoreWaitKind, 30e-6), e(configs.CoreWaitIdleKind, 10e-6)}, c.wBoth},
		} {
			got := est(v.times...)
			if d := got.Prefill.TTFTS - base.Prefill.TTFTS; math.Abs(d-v.want) > 1e-9 {
				t.Errorf("%d cores (unbound %v), %s: TTFT grew by %.6g s, want %.6g s", c.cores, c.unbound, v.name, d, v.want)
			}
			if d := got.Decode.TPOTS - base.Decode.TPOTS; math.Abs(d-v.want) > 1e-9 {
				t.Errorf("%d cores (unbound %v), %s: TPOT grew by %.6g s, want %.6g s", c.cores, c.unbound, v.name, d, v.want)
			}
		}
	}
}
