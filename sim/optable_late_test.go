package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestPartnerLate: the partner behind's late arrival, one core wait W per
// collective times the core wait's share, charged only to a pipeline's
// collectives on a host whose ranks outnumber its cores. W = 30 µs and
// W_idle = 10 µs per step after the burst; tp2pp2-tiny on 2 cores (4
// ranks, full activity n/C = 2, share = (s − 1)/(2 − 1)):
//
//	all_reduce, activity 2 (the other stage active): 30 · 1   = 30 µs
//	all_reduce, activity 1.5:                        30 · 0.5 = 15 µs
//	all_reduce, activity 1 (the other stage asleep): 30 · 0   = 0
//	all_gather, activity 2 (one arrival, 1 step):    30 µs, as the all_reduce
//	send (no partner to wait for):                   0
//	W_idle alone in the table (no W):                0
//
// and 0 for tp2-dp2-tiny on 2 cores (no pipeline: the replicas run in
// step, as W's loop) and for tp2pp2-tiny on 4 cores (ranks = cores).
// Beside coreWaitS's 2 · (30 · 1 + 10 · 0) = 60 µs at activity 2 the
// all_reduce is charged 90 µs in all.
func TestPartnerLate(t *testing.T) {
	plan := func(name string, cores int) *partition.Plan { return coresPlan(t, name, cores, nil, nil) }
	e := func(kind string, cores int, w float64) configs.OpTime {
		return opEntry(kind, configs.CoreWaitShape(cores), 20_000, 0, w, 4)
	}
	both := NewOpTable([]configs.OpTime{e(configs.CoreWaitKind, 2, 30e-6), e(configs.CoreWaitIdleKind, 2, 10e-6)})
	idleOnly := NewOpTable([]configs.OpTime{e(configs.CoreWaitIdleKind, 2, 10e-6)})
	onFour := NewOpTable([]configs.OpTime{e(configs.CoreWaitKind, 4, 30e-6), e(configs.CoreWaitIdleKind, 4, 10e-6)})
	ar := &partition.Op{Kind: partition.AllReduce, Group: []int{0, 1}, Bytes: 4096}
	ag := &partition.Op{Kind: partition.AllGather, Group: []int{2, 3}, Bytes: 768}
	send := &partition.Op{Kind: partition.Send, Group: []int{1, 3}, Bytes: 4096}
	tp2pp2, tp2dp2, tp2pp2on4 := plan("test/tp2pp2-tiny", 2), plan("test/tp2-dp2-tiny", 2), plan("test/tp2pp2-tiny", 4)
	for _, c := range []struct {
		name     string
		tab      *OpTable
		plan     *partition.Plan
		op       *partition.Op
		activity float64
		want     float64
	}{
		{"other stage active", both, tp2pp2, ar, 2, 30e-6},
		{"half", both, tp2pp2, ar, 1.5, 15e-6},
		{"other stage asleep", both, tp2pp2, ar, 1, 0},
		{"all_gather", both, tp2pp2, ag, 2, 30e-6},
		{"send", both, tp2pp2, send, 2, 0},
		{"no core wait", idleOnly, tp2pp2, ar, 2, 0},
		{"no pipeline", both, tp2dp2, ar, 2, 0},
		{"ranks fill the cores", onFour, tp2pp2on4, ar, 2, 0},
	} {
		if got := partnerLateS(c.tab, c.plan, c.op, 20e-6, c.activity); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %.6g s, want %.6g s", c.name, got, c.want)
		}
	}
	if got := coreWaitS(both, tp2pp2, ar, 20e-6, 2) + partnerLateS(both, tp2pp2, ar, 20e-6, 2); math.Abs(got-90e-6) > 1e-12 {
		t.Errorf("all_reduce's charge at activity 2: %.6g s, want 90 µs", got)
	}
}
