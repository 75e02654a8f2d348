package calib

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
)

// turnOffRanks are four ranks' turns (ns; Off the time off the core):
//
//	rank 0: await 0,       hand-on 30 000,  sent 31 000,  off 5 000   on the core 25 µs
//	        await 100 000, hand-on 400 000, sent 460 000, off 60 000  on 240 µs
//	rank 1: await 33 000,  hand-on 45 000,  sent 47 000,  off 3 000   on 9 µs
//	        await 420 000, hand-on 700 000, sent 701 000, off 40 000  on 240 µs
//	rank 2: await 46 000,  hand-on 80 000,  off not read
//	        await 702 000, hand-on 900 000,                off 18 000  on 180 µs
//	rank 3: await 950 000, hand-on 940 000 (before it),    off 1       skipped
func turnOffRanks() []rankOpTimes {
	return []rankOpTimes{
		{Rank: 1, Turns: []turnStamp{{Await: 33000, HandOn: 45000, Sent: 47000, Off: 3000, OffOK: true}, {Await: 420000, HandOn: 700000, Sent: 701000, Off: 40000, OffOK: true}}},
		{Rank: 0, Turns: []turnStamp{{Await: 0, HandOn: 30000, Sent: 31000, Off: 5000, OffOK: true}, {Await: 100000, HandOn: 400000, Sent: 460000, Off: 60000, OffOK: true}}},
		{Rank: 3, Turns: []turnStamp{{Await: 950000, HandOn: 940000, Off: 1, OffOK: true}}},
		{Rank: 2, Turns: []turnStamp{{Await: 46000, HandOn: 80000}, {Await: 702000, HandOn: 900000, Off: 18000, OffOK: true}}},
	}
}

// TestTurnOffs: the turns above banded by their time on the core (edges
// 10, 40, 160, 640 µs): ≤ 10 µs rank 1's first (9 µs on, 3 off); ≤ 40 µs
// rank 0's first (25 on, 5 off); ≤ 640 µs rank 0's, 1's and 2's second
// (240, 240, 180 on; 60, 40, 18 off): median on 240 µs (sorted 180, 240,
// 240), median off 40 µs, mean off (60 + 40 + 18)/3 = 39.33 µs. Rank 2's
// first turn (not read) and rank 3's (hand-on before its start) are left
// out.
func TestTurnOffs(t *testing.T) {
	got := turnOffs(turnOffRanks())
	want := []turnOffBin{
		{UpToS: 10e-6, N: 1, PassS: 9e-6, MedS: 3e-6, MeanS: 3e-6},
		{UpToS: 40e-6, N: 1, PassS: 25e-6, MedS: 5e-6, MeanS: 5e-6},
		{UpToS: 640e-6, N: 3, PassS: 240e-6, MedS: 40e-6, MeanS: 118e-6 / 3},
	}
	checkBands(t, got, want)
	// 5 µs off 25 on: 0.2 of the time on the core.
	if s := describeTurnOffs(got); !strings.Contains(s, "turns of 2.5e-05 s on the core (median; 1 turns): 5e-06 s off it median, 5e-06 s mean (0.2 of the time on it)") {
		t.Errorf("note %q", s)
	}
	if got := turnOffs([]rankOpTimes{{Rank: 0, Turns: []turnStamp{{Await: 5, HandOn: 9}}}}); got != nil {
		t.Errorf("no turn read its time off the core: %+v", got)
	}
	// The thread's CPU time over the wall time: at least 0.
	if got := turnOffNs(30000, 25*time.Microsecond); got != 5000 {
		t.Errorf("turnOffNs(30 µs, 25 µs) = %d ns, want 5000", got)
	}
	if got := turnOffNs(30000, 31*time.Microsecond); got != 0 {
		t.Errorf("turnOffNs(30 µs, 31 µs) = %d ns, want 0", got)
	}
}

// TestTurnSendOrder: the hand-ons of turnOffRanks, rank r − 1's i-th to
// rank r's i-th: 0→1 first (sent 31 000, received 33 000: the sender
// first; call 1 µs), 0→1 second (sent 460 000, received 420 000: the
// receiver first; 60 µs), 1→2 first (47 000 against 46 000: the receiver
// first; 2 µs), 1→2 second (701 000 against 702 000; 1 µs); rank 3 has
// one turn against rank 2's two and is left out. 4 hand-ons, 2 receiver
// first, calls 1, 60, 2, 1 µs: median 1 µs (the lower middle of 1, 1,
// 2, 60), mean 64/4 = 16 µs.
func TestTurnSendOrder(t *testing.T) {
	o := turnSendOrder(turnOffRanks())
	if o.N != 4 || o.ReceiverFirst != 2 || math.Abs(o.CallS-1e-6) > 1e-15 || math.Abs(o.CallMeanS-16e-6) > 1e-15 {
		t.Errorf("order %+v, want 4 hand-ons, 2 receiver first, calls 1 µs median, 16 µs mean", o)
	}
	if s := describeTurnOrder(o); !strings.Contains(s, "in 2 of 4 hand-ons (50 %)") {
		t.Errorf("note %q", s)
	}
	if o := turnSendOrder(nil); o.N != 0 || describeTurnOrder(o) != "no hand-on with its Send call's return read" {
		t.Errorf("no ranks: %+v", o)
	}
}

// TestTurnOffEntries: the three bands of TestTurnOffs at 16 ranks on 2
// cores are entries of kind turn_off, shape cores=2, ranks 16, at sizes
// 9 000, 25 000 and 240 000 ns, times 3, 5 and 39.33 µs (the means); two
// bands at the same median size keep 1 ns apart; none at 2 ranks on 2
// cores; the entries validate.
func TestTurnOffEntries(t *testing.T) {
	bins := turnOffs(turnOffRanks())
	es := turnOffEntries(bins, 16, 2)
	want := []struct {
		size int64
		s    float64
	}{{9000, 3e-6}, {25000, 5e-6}, {240000, 118e-6 / 3}}
	if len(es) != len(want) {
		t.Fatalf("entries %+v", es)
	}
	for i, w := range want {
		e := es[i]
		if e.Kind != configs.TurnOffKind || e.Shape != "cores=2" || e.Ranks != 16 || e.Size != w.size || math.Abs(e.TimeS-w.s) > 1e-15 || e.Samples != bins[i].N {
			t.Errorf("entry %d: %+v, want size %d, %g s", i, e, w.size, w.s)
		}
	}
	if err := configs.ValidateOpTimes("op_time", es); err != nil {
		t.Errorf("entries do not validate: %v", err)
	}
	twin := turnOffEntries([]turnOffBin{{PassS: 9e-6, MeanS: 1e-6, N: 1}, {PassS: 9e-6, MeanS: 2e-6, N: 1}}, 16, 2)
	if len(twin) != 2 || twin[0].Size != 9000 || twin[1].Size != 9001 {
		t.Errorf("two bands at 9 µs: %+v, want sizes 9000 and 9001", twin)
	}
	if es := turnOffEntries(bins, 2, 2); es != nil {
		t.Errorf("2 ranks on 2 cores: %+v", es)
	}
}

// TestTurnStampsLinesOff: a stamp's Send call return and time off the
// core go out and come back, and unread ones stay unread (0, not OffOK).
func TestTurnStampsLinesOff(t *testing.T) {
	ts := []turnStamp{
		{Await: 1_000_000, HandOn: 1_030_000, Sent: 1_031_000, Off: 5000, OffOK: true},
		{Await: 1_100_000, HandOn: 1_130_000},
		{Await: 1_200_000, HandOn: 1_230_000, Sent: 1_240_000, Off: 0, OffOK: true},
	}
	var b strings.Builder
	if err := writeTurnStamps(&b, 3, ts); err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(strings.TrimSuffix(b.String(), "\n"), turnStampsPrefix)
	if !ok {
		t.Fatalf("line %q: no prefix", b.String())
	}
	rank, back, err := parseTurnStamps(rest)
	if err != nil || rank != 3 || len(back) != len(ts) {
		t.Fatalf("rank %d, %d stamps, err %v", rank, len(back), err)
	}
	for i := range ts {
		if back[i] != ts[i] {
			t.Errorf("stamp %d: %+v, want %+v", i, back[i], ts[i])
		}
	}
	if _, _, err := parseTurnStamps(`{"rank":1,"base":5,"s":[1,2,3,4,5,6]}`); err == nil || !strings.Contains(err.Error(), "groups of 4") {
		t.Errorf("6 numbers: %v, want an error naming groups of 4", err)
	}
}
