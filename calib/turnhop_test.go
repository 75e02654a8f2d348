package calib

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

// TestTurnHops: three ranks, two turns each (ns), given out of order:
//
//	rank 0: (await 0, hand-on 5 000), (100 000, 130 000)    passes 5, 30 µs
//	rank 1: (25 000, 33 000), (150 000, 250 000)             passes 8, 100 µs
//	rank 2: (45 000, 50 000), (262 000, 270 000)
//
// hops: rank 1's turns 25 000 − 5 000 = 20 µs (after a 5 µs pass) and
// 150 000 − 130 000 = 20 µs (after 30 µs); rank 2's 45 000 − 33 000 = 12
// µs (after 8 µs) and 262 000 − 250 000 = 12 µs (after 100 µs). Bands:
// ≤ 10 µs: passes 5 and 8, hops 20 and 12 — medians 5 and 12 µs (the
// empirical median, medianOf: of two, the lower), mean hop 16 µs; ≤ 40 µs: one hop of 20 µs after 30; ≤ 160 µs: one of 12
// after 100. A fourth rank with one turn less pairs with nothing.
func TestTurnHops(t *testing.T) {
	ranks := []rankOpTimes{
		{Rank: 2, Turns: []turnStamp{{Await: 45000, HandOn: 50000}, {Await: 262000, HandOn: 270000}}},
		{Rank: 0, Turns: []turnStamp{{Await: 0, HandOn: 5000}, {Await: 100000, HandOn: 130000}}},
		{Rank: 1, Turns: []turnStamp{{Await: 25000, HandOn: 33000}, {Await: 150000, HandOn: 250000}}},
		{Rank: 3, Turns: []turnStamp{{Await: 60000, HandOn: 61000}}},
	}
	got := turnHops(ranks)
	want := []turnHopBin{
		{UpToS: 10e-6, N: 2, PassS: 5e-6, MedS: 12e-6, MeanS: 16e-6},
		{UpToS: 40e-6, N: 1, PassS: 30e-6, MedS: 20e-6, MeanS: 20e-6},
		{UpToS: 160e-6, N: 1, PassS: 100e-6, MedS: 12e-6, MeanS: 12e-6},
	}
	checkBands(t, got, want)
	if s := describeTurnHops(got); !strings.Contains(s, "after passes of 5e-06 s (median; 2 hops): 1.2e-05 s median, 1.6e-05 s mean") {
		t.Errorf("note %q", s)
	}
	if got := turnHops([]rankOpTimes{{Rank: 0}}); got != nil {
		t.Errorf("one rank: %+v", got)
	}
}

// TestTurnStampsLines: 2 500 stamps of rank 7 (await 1.7e18 + 40 000·i
// ns, hand-on 25 000 ns later, the last without one) go out as 3 lines
// (1 000, 1 000, 500) each under the launcher's 64 KiB, and parse back
// to the same stamps, the missing hand-on still 0.
func TestTurnStampsLines(t *testing.T) {
	ts := make([]turnStamp, 2500)
	for i := range ts {
		ts[i] = turnStamp{Await: 1_700_000_000_000_000_000 + 40_000*int64(i), HandOn: 1_700_000_000_000_025_000 + 40_000*int64(i)}
	}
	ts[len(ts)-1].HandOn = 0
	var b strings.Builder
	if err := writeTurnStamps(&b, 7, ts); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	var back []turnStamp
	for _, l := range lines {
		if len(l) >= 64<<10 {
			t.Errorf("a line of %d bytes", len(l))
		}
		rest, ok := strings.CutPrefix(l, turnStampsPrefix)
		if !ok {
			t.Fatalf("line %.40q: no prefix", l)
		}
		rank, got, err := parseTurnStamps(rest)
		if err != nil || rank != 7 {
			t.Fatalf("rank %d, err %v", rank, err)
		}
		back = append(back, got...)
	}
	if len(back) != len(ts) {
		t.Fatalf("%d stamps back, want %d", len(back), len(ts))
	}
	for i := range ts {
		if back[i] != ts[i] {
			t.Fatalf("stamp %d: %+v, want %+v", i, back[i], ts[i])
		}
	}
	if _, _, err := parseTurnStamps(`{"rank":1,"base":5,"s":[1,2,3]}`); err == nil {
		t.Error("an odd count of numbers: no error")
	}
}

// TestRecvWaitTurnsEntries: bands after passes of 38 µs (mean hop 23 µs)
// and 310 µs (32 µs), a one-way time of 5 µs, 16 ranks on 2 cores → two
// entries of kind recv_wait_turns, shape cores=2, ranks 16: 18 µs at
// size 38 000 ns and 27 µs at 310 000; a band whose mean is under the
// one-way time keeps 1 ns; none at 2 ranks on 2 cores. smallSendS is the
// median of the send entries ≤ 1 KiB among the count asked: (4, 6, 5 µs)
// → 5 µs, the 4 KiB one and those among 4 ranks left out.
func TestRecvWaitTurnsEntries(t *testing.T) {
	bins := []turnHopBin{{UpToS: 40e-6, N: 7, PassS: 38e-6, MedS: 18e-6, MeanS: 23e-6}, {UpToS: 640e-6, N: 9, PassS: 310e-6, MedS: 21e-6, MeanS: 32e-6}}
	es := recvWaitTurnsEntries(bins, 5e-6, 16, 2, 5)
	want := []struct {
		size int64
		s    float64
	}{{38_000, 18e-6}, {310_000, 27e-6}}
	if len(es) != len(want) {
		t.Fatalf("entries %+v", es)
	}
	for i, w := range want {
		e := es[i]
		if e.Kind != configs.RecvWaitTurnsKind || e.Shape != "cores=2" || e.Ranks != 16 || e.Size != w.size || math.Abs(e.TimeS-w.s) > 1e-15 {
			t.Errorf("entry %d: %+v, want size %d, %g s", i, e, w.size, w.s)
		}
	}
	if err := configs.ValidateOpTimes("op_time", es); err != nil {
		t.Errorf("entries do not validate: %v", err)
	}
	if es := recvWaitTurnsEntries([]turnHopBin{{PassS: 38e-6, MeanS: 3e-6, N: 1}}, 5e-6, 16, 2, 5); len(es) != 1 || es[0].TimeS != noWaitS {
		t.Errorf("mean under the one-way time: %+v, want 1 ns", es)
	}
	if es := recvWaitTurnsEntries(bins, 5e-6, 2, 2, 5); es != nil {
		t.Errorf("2 ranks on 2 cores: %+v", es)
	}
	send := func(size int64, s float64, ranks int) configs.OpTime {
		return configs.OpTime{Kind: "send", Shape: "ranks=2", Size: size, TimeS: s, Ranks: ranks}
	}
	ts := []configs.OpTime{send(4, 4e-6, 16), send(64, 6e-6, 16), send(1024, 5e-6, 16), send(4096, 9e-6, 16), send(4, 1e-6, 4)}
	if got := smallSendS(ts, 16); math.Abs(got-5e-6) > 1e-15 {
		t.Errorf("small send %g s, want 5 µs", got)
	}
	if got := smallSendS(ts, 8); got != 0 {
		t.Errorf("no entries at 8: %g", got)
	}
}

// checkBands fails t where got's bands differ from want's (counts exactly,
// seconds to 1e-15).
func checkBands(t *testing.T, got, want []passBand) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("bands %+v, want %+v", got, want)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-15 }
	for i, w := range want {
		g := got[i]
		if g.N != w.N || !near(g.UpToS, w.UpToS) || !near(g.PassS, w.PassS) || !near(g.MedS, w.MedS) || !near(g.MeanS, w.MeanS) {
			t.Errorf("band %d: %+v, want %+v", i, g, w)
		}
	}
}
