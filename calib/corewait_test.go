package calib

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
)

// us is xs, given in microseconds, in seconds (in place).
func us(xs ...float64) []float64 {
	for i := range xs {
		xs[i] *= 1e-6
	}
	return xs
}

// TestCoreWaitEntry: three sizes, three repeats, times in µs; after a
// burst each repeat is (all_reduce, burst wall).
//
//	size      back to back     after a burst (all_reduce)   (burst − alone)/2
//	256 B     100 100 100      140 300 100                   20  100   0
//	4 KiB     200 200 200      260 380 150                   30   90   0 (clamped: −25)
//	32 KiB    400 400 400      420 600 400                   10  100   0
//	median over sizes, per repeat:                           20  100   0
//
// → time_s 20 µs (median of 20, 100, 0), min 0 (kept as 1 ns), max 100 µs, 3 samples; the
// bursts' wall times are 50 µs but for two of 70 and one of 90: median of
// the nine 50 µs → size 50 000 ns.
func TestCoreWaitEntry(t *testing.T) {
	alone := [][]float64{us(100, 100, 100), us(200, 200, 200), us(400, 400, 400)}
	burstT := [][]float64{us(140, 50, 300, 70, 100, 50), us(260, 50, 380, 90, 150, 50), us(420, 50, 600, 70, 400, 50)}
	e, ok, err := coreWaitEntry(alone, burstT, 4, 2)
	if err != nil || !ok {
		t.Fatalf("entry: ok %t, err %v", ok, err)
	}
	close := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if e.Kind != configs.CoreWaitKind || e.Shape != "cores=2" || e.Size != 50_000 || e.Ranks != 4 || e.Samples != 3 ||
		!close(e.TimeS, 20e-6) || !close(e.TimeMinS, 1e-9) || !close(e.TimeMaxS, 100e-6) {
		t.Errorf("entry %+v; want core_wait cores=2 size 50000 ranks 4, 20 µs (0–100 µs), 3 samples", e)
	}
	if err := configs.ValidateOpTimes("op_time", []configs.OpTime{e}); err != nil {
		t.Errorf("the entry is not a valid op time: %v", err)
	}
	// A wait in one repeat of three: median 0, kept as 1 ns (max 60 µs).
	once := [][]float64{us(100, 5, 220, 5, 100, 5), us(200, 5, 320, 5, 200, 5), us(400, 5, 520, 5, 400, 5)}
	if e, ok, err := coreWaitEntry(alone, once, 4, 2); !ok || err != nil || e.TimeS != 1e-9 || !close(e.TimeMaxS, 60e-6) || e.Size != 5000 {
		t.Errorf("one repeat waited: %+v, ok %t, err %v; want 1 ns (max 60 µs) at 5000 ns", e, ok, err)
	}
	// No wait measured: ok is false, and the entry (kept by the core
	// wait and the wait beside idle ranks alike) holds 1 ns
	// throughout at the bursts' 5 µs.
	same := [][]float64{us(100, 5, 100, 5, 100, 5), us(200, 5, 200, 5, 200, 5), us(400, 5, 400, 5, 400, 5)}
	if e, ok, err := coreWaitEntry(alone, same, 4, 2); ok || err != nil || e.TimeS != 1e-9 || e.TimeMinS != 1e-9 || e.TimeMaxS != 1e-9 || e.Size != 5000 {
		t.Errorf("equal times: %+v, ok %t, err %v; want ok false, 1 ns throughout at 5000 ns, no error", e, ok, err)
	}
	// At 2 ranks on 2 cores (a core each) the entry holds the least
	// repeat, not the median: the table above's 20, 100, 0 µs → 0, kept
	// as 1 ns (extremes 1 ns and 100 µs; ok: a repeat waited). With the
	// third repeat at 130 / 230 / 430 µs after the burst instead —
	// (130 − 100)/2 = 15, (230 − 200)/2 = 15, (430 − 400)/2 = 15 → 15 µs —
	// the repeats read 20, 100, 15: least 15 µs at 2 ranks, median 20 µs at
	// 4 ranks on the same 2 cores.
	if e, ok, err := coreWaitEntry(alone, burstT, 2, 2); !ok || err != nil || e.TimeS != 1e-9 || e.TimeMinS != 1e-9 || !close(e.TimeMaxS, 100e-6) || e.Ranks != 2 {
		t.Errorf("2 ranks on 2 cores: %+v, ok %t, err %v; want the least repeat, 1 ns (1 ns–100 µs)", e, ok, err)
	}
	third := [][]float64{us(140, 50, 300, 70, 130, 50), us(260, 50, 380, 90, 230, 50), us(420, 50, 600, 70, 430, 50)}
	if e, _, err := coreWaitEntry(alone, third, 2, 2); err != nil || !close(e.TimeS, 15e-6) || !close(e.TimeMinS, 15e-6) || !close(e.TimeMaxS, 100e-6) {
		t.Errorf("2 ranks on 2 cores, repeats 20, 100, 15 µs: %+v, err %v; want 15 µs (15–100 µs)", e, err)
	}
	if e, _, err := coreWaitEntry(alone, third, 4, 2); err != nil || !close(e.TimeS, 20e-6) {
		t.Errorf("4 ranks on 2 cores, repeats 20, 100, 15 µs: %+v, err %v; want the median, 20 µs", e, err)
	}
	// Mismatched shapes are an error, not a guess.
	if _, _, err := coreWaitEntry(alone, burstT[:2], 4, 2); err == nil {
		t.Error("3 sizes against 2: no error")
	}
	if _, _, err := coreWaitEntry(alone, alone, 4, 2); err == nil {
		t.Error("burst times without their wall times: no error")
	}
}

// TestCoreWaitEntries: the alone times of TestCoreWaitEntry and two
// bursts, the first (5 µs walls) met no wait in any repeat, the second
// (50 µs walls) 20 µs median as there. Both are kept: 1 ns at 5000 ns,
// 20 µs at 50 000 ns, waited true — so that sim prices a collective after
// 5 µs of compute at 1 ns, not at the 50 µs burst's 20 µs (the nearest
// entry outside the measured bursts). With the second burst also without
// a wait, both are kept at 1 ns and waited is false; a mismatched burst
// is an error naming it.
func TestCoreWaitEntries(t *testing.T) {
	alone := [][]float64{us(100, 100, 100), us(200, 200, 200), us(400, 400, 400)}
	none := [][]float64{us(100, 5, 100, 5, 100, 5), us(200, 5, 200, 5, 200, 5), us(400, 5, 400, 5, 400, 5)}
	waits := [][]float64{us(140, 50, 300, 70, 100, 50), us(260, 50, 380, 90, 150, 50), us(420, 50, 600, 70, 400, 50)}
	es, waited, err := coreWaitEntries(alone, [][][]float64{none, waits}, 4, 2)
	close := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if err != nil || !waited || len(es) != 2 || es[0].Size != 5000 || es[0].TimeS != 1e-9 || es[0].Kind != configs.CoreWaitKind ||
		es[1].Size != 50_000 || !close(es[1].TimeS, 20e-6) {
		t.Fatalf("entries %+v, waited %t, err %v; want 1 ns at 5000 ns and 20 µs at 50 000 ns, waited", es, waited, err)
	}
	if err := configs.ValidateOpTimes("op_time", es); err != nil {
		t.Errorf("the entries are not valid op times: %v", err)
	}
	es, waited, err = coreWaitEntries(alone, [][][]float64{none, none}, 4, 2)
	if err != nil || waited || len(es) != 2 || es[0].TimeS != 1e-9 || es[1].TimeS != 1e-9 {
		t.Errorf("no wait after either burst: %+v, waited %t, err %v; want two 1 ns entries, waited false", es, waited, err)
	}
	if _, _, err := coreWaitEntries(alone, [][][]float64{none, waits[:2]}, 4, 2); err == nil {
		t.Error("a burst with 2 sizes against 3: no error")
	}
}

func TestCoreWaitCounts(t *testing.T) {
	// 2 cores: --nproc 4 with --op-ranks 1,2,4,16 → 4, 2 and 16 (--nproc
	// first; 2 fills the cores; 1 and odd counts cannot pair).
	got := coreWaitCounts(Options{Ranks: 4, OpRanks: []int{1, 2, 3, 4, 16}}, 2)
	if len(got) != 3 || got[0] != 4 || got[1] != 2 || got[2] != 16 {
		t.Errorf("counts %v, want [4 2 16]", got)
	}
	// 4 cores: 2 is below them, not measured.
	if got := coreWaitCounts(Options{Ranks: 2, OpRanks: []int{4, 16}}, 4); len(got) != 2 || got[0] != 4 || got[1] != 16 {
		t.Errorf("4 cores: counts %v, want [4 16]", got)
	}
}

// TestRecvWaitEntry: two sizes, three repeats, µs.
//
//	size     one-way        ring hop − its 5 µs burst   − one-way
//	256 B    30 30 30       70 30 90                     40  0 60
//	4 KiB    40 40 40       100 20 90                    60  0 50 (clamped: −20)
//	median over sizes (of two: the lower):  40  0 50
//
// (each hop given as its time, then its burst's). → 40 µs (min 0, kept as
// 1 ns; max 50 µs), recv_wait cores=2 ranks 16, at the bursts' median wall
// time, 5 µs = size 5000 (ns).
func TestRecvWaitEntry(t *testing.T) {
	e, ok := recvWaitEntry([][]float64{us(30, 30, 30), us(40, 40, 40)}, [][]float64{us(75, 5, 35, 5, 95, 5), us(105, 5, 25, 5, 95, 5)}, 16, 2)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !ok || e.Kind != configs.RecvWaitKind || e.Shape != "cores=2" || e.Ranks != 16 || e.Size != 5000 ||
		!near(e.TimeS, 40e-6) || !near(e.TimeMinS, 1e-9) || !near(e.TimeMaxS, 50e-6) {
		t.Errorf("entry %+v ok %t; want recv_wait cores=2 ranks 16 size 5000, 40 µs (1 ns–50 µs)", e, ok)
	}
	if _, ok := recvWaitEntry([][]float64{us(30)}, [][]float64{us(25, 5)}, 16, 2); ok {
		t.Error("a hop faster than the one-way time: an entry, want none")
	}
}

// TestCoreStretchEntry: two sizes, three repeats, each (all_reduce,
// burst wall) in µs; the burst took 40 µs alone.
//
//	repeat     size 1 wall   size 2 wall   median over sizes (lower middle)
//	1          50            70            50
//	2          44            46            44
//	3          90            60            60
//
// → time 50 µs (median of 50, 44, 60), min 44, max 60, 3 samples, at
// size 40 000 ns: a stretch of 50/40 = 1.25.
func TestCoreStretchEntry(t *testing.T) {
	burstT := [][]float64{us(200, 50, 200, 44, 200, 90), us(300, 70, 300, 46, 300, 60)}
	e, ok := coreStretchEntry(40e-6, burstT, 4, 2)
	close := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !ok || e.Kind != configs.CoreStretchKind || e.Shape != "cores=2" || e.Size != 40_000 || e.Ranks != 4 || e.Samples != 3 ||
		!close(e.TimeS, 50e-6) || !close(e.TimeMinS, 44e-6) || !close(e.TimeMaxS, 60e-6) {
		t.Errorf("entry %+v, ok %t; want core_stretch cores=2 size 40000 ranks 4, 50 µs (44–60), 3 samples", e, ok)
	}
	if err := configs.ValidateOpTimes("op_time", []configs.OpTime{e}); err != nil {
		t.Errorf("the entry is not a valid op time: %v", err)
	}
	if _, ok := coreStretchEntry(0, burstT, 4, 2); ok {
		t.Error("no time alone: an entry")
	}
	if _, ok := coreStretchEntry(40e-6, [][]float64{us(1, 2, 3, 4), us(1, 2)}, 4, 2); ok {
		t.Error("sizes with different repeats: an entry")
	}
}

// TestSendCallEntries: two sizes, three repeats of (one-way, Send call) in
// µs:
//
//	256 B:   (20, 3) (25, 5) (22, 4)   → calls 3, 5, 4: median 4, min 3, max 5
//	4 KiB:   (30, 6) (31, 0) (33, 9)   → calls 6, 0 (kept as 1 ns), 9: median 6
//
// each an entry {send_call, ranks=2, size, ranks 4}; times of odd length
// or for another number of sizes are an error.
func TestSendCallEntries(t *testing.T) {
	es, err := sendCallEntries([][]float64{us(20, 3, 25, 5, 22, 4), us(30, 6, 31, 0, 33, 9)}, []int64{256, 4096}, 4)
	if err != nil || len(es) != 2 {
		t.Fatalf("entries %+v, err %v; want 2", es, err)
	}
	checkCallEntries(t, es, configs.SendCallKind, 4, []callWant{{256, 4e-6, 3e-6, 5e-6}, {4096, 6e-6, 1e-9, 9e-6}})
	if _, err := sendCallEntries([][]float64{us(20, 3, 25)}, []int64{256}, 4); err == nil {
		t.Error("odd times: no error")
	}
	if _, err := sendCallEntries([][]float64{us(20, 3)}, []int64{256, 4096}, 4); err == nil {
		t.Error("1 size of 2: no error")
	}
}

// TestCoreWaitRepeatsNote: the alone times and bursts of
// TestCoreWaitEntries. Per repeat, the median over sizes of
// (after − alone)/2 (µs):
//
//	burst 1 (5 µs walls):  every size 0 in every repeat → 0, 0, 0
//	burst 2 (50 µs walls): TestCoreWaitEntry's table    → 20, 100, 0
//
// so the note lists, per entry by its size in ns (the entries' sizes are
// given, here 5000 and 50 000 as coreWaitEntries wrote them), those
// values in the order measured, one decimal; the entry's median (20 µs)
// is the median of its listed values.
func TestCoreWaitRepeatsNote(t *testing.T) {
	alone := [][]float64{us(100, 100, 100), us(200, 200, 200), us(400, 400, 400)}
	none := [][]float64{us(100, 5, 100, 5, 100, 5), us(200, 5, 200, 5, 200, 5), us(400, 5, 400, 5, 400, 5)}
	waits := [][]float64{us(140, 50, 300, 70, 100, 50), us(260, 50, 380, 90, 150, 50), us(420, 50, 600, 70, 400, 50)}
	es, _, err := coreWaitEntries(alone, [][][]float64{none, waits}, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := coreWaitRepeatsNote(alone, [][][]float64{none, waits}, es, 4, 2)
	want := "core wait repeats at 4 ranks on 2 cores, µs per message step in the order measured, per entry (size: the burst's wall time in ns): size 5000: 0.0 0.0 0.0; size 50000: 20.0 100.0 0.0"
	if got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
	ws, err := coreWaitPerRepeat(alone, waits)
	if err != nil || len(ws) != 3 || math.Abs(ws[0]-20e-6) > 1e-12 || math.Abs(ws[1]-100e-6) > 1e-12 || ws[2] != 0 {
		t.Errorf("per repeat %v, err %v; want 20, 100, 0 µs", ws, err)
	}
	if _, err := coreWaitPerRepeat(alone, waits[:2]); err == nil {
		t.Error("3 sizes against 2: no error")
	}
}

// TestMeasureCoreWaitNote: the core wait at 2 process ranks on 2 cores
// with 3 repeats: the repeats note lists 3 values for each core_wait
// entry's size, and the entry holds the least of its listed values (a
// rank a core each: coreWaitOf; within their 0.05 µs rounding; a least of
// 0 is kept as 1 ns), its extremes theirs; a note of the entries says "least of 3
// repeats" where a repeat waited.
func TestMeasureCoreWaitNote(t *testing.T) {
	o := Options{Repeats: 3, MinSample: 100 * time.Microsecond, LinkArgv: []string{os.Args[0], "-test.run=^$"}}
	cal := &configs.Calibration{}
	m, err := measureCoreWaitTimes(context.Background(), o, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := addCoreWait(cal, m, 2, 2); err != nil {
		t.Fatal(err)
	}
	var note string
	for _, n := range cal.Info.Notes {
		if strings.HasPrefix(n, "core wait repeats at 2 ranks on 2 cores") {
			note = n
		}
	}
	if note == "" {
		t.Fatalf("no repeats note among %q", cal.Info.Notes)
	}
	listed := map[int64][]float64{}
	_, lists, _ := strings.Cut(note, "in ns): ")
	for _, part := range strings.Split(lists, "; ") {
		size, vals, ok := strings.Cut(strings.TrimPrefix(part, "size "), ": ")
		s, err := strconv.ParseInt(size, 10, 64)
		if !ok || err != nil {
			t.Fatalf("note part %q: want \"size N: values\"", part)
		}
		for _, v := range strings.Fields(vals) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("note part %q: %v", part, err)
			}
			listed[s] = append(listed[s], f*1e-6)
		}
	}
	n := 0
	for _, e := range cal.OpTimes {
		if e.Kind != configs.CoreWaitKind {
			continue
		}
		n++
		vals := listed[e.Size]
		if e.Samples != 3 || len(vals) != 3 {
			t.Errorf("entry at size %d: %d samples, %d listed values; want 3 and 3", e.Size, e.Samples, len(vals))
			continue
		}
		sp := spreadOf(vals)
		least, most := max(sp.Min, noWaitS), max(sp.Max, noWaitS)
		if math.Abs(least-e.TimeS) > 0.051e-6 || math.Abs(least-e.TimeMinS) > 0.051e-6 || math.Abs(most-e.TimeMaxS) > 0.051e-6 {
			t.Errorf("entry at size %d: %g s (%g–%g s), the listed values' least %g s (greatest %g s)", e.Size, e.TimeS, e.TimeMinS, e.TimeMaxS, least, most)
		}
	}
	for _, nt := range cal.Info.Notes {
		if strings.HasPrefix(nt, "core wait at 2 ranks on 2 cores, per message step") && !strings.Contains(nt, "(least of 3 repeats in 1 launch;") {
			t.Errorf("note %q: want the entries said to be the least of 3 repeats", nt)
		}
	}
	if n != len(CoreWaitBursts) || len(listed) != n {
		t.Errorf("%d core_wait entries and %d listed, want %d each", n, len(listed), len(CoreWaitBursts))
	}
}

// TestCoreWaitTimesPool: a second launch's repeats follow the first's
// in every group and size ([[1 2] [3]] and [[10] [30 31]] pooled:
// [[1 2 10] [3 30 31]]), the repeats and launches add up (5 + 5 = 10 in
// 2), and launches of another layout are refused.
func TestCoreWaitTimesPool(t *testing.T) {
	a := &coreWaitTimes{times: [][][]float64{{{1, 2}}, {{3}}}, idle: 1, ring: 2, repeats: 5, launches: 1}
	b := &coreWaitTimes{times: [][][]float64{{{10}}, {{30, 31}}}, idle: 1, ring: 2, repeats: 5, launches: 1}
	if err := a.pool(b); err != nil {
		t.Fatal(err)
	}
	want := [][][]float64{{{1, 2, 10}}, {{3, 30, 31}}}
	if fmt.Sprint(a.times) != fmt.Sprint(want) || a.repeats != 10 || a.launches != 2 {
		t.Errorf("pooled %v, %d repeats in %d launches; want %v, 10 in 2", a.times, a.repeats, a.launches, want)
	}
	for _, c := range []*coreWaitTimes{
		{times: [][][]float64{{{1}}}, idle: 1, ring: 2},
		{times: [][][]float64{{{1}}, {{3}}}, idle: 2, ring: 2},
		{times: [][][]float64{{{1}, {2}}, {{3}}}, idle: 1, ring: 2},
	} {
		if err := a.pool(c); err == nil {
			t.Errorf("pooled with %+v: no error", c)
		}
	}
	if launchesOf(1) != "1 launch" || launchesOf(2) != "2 launches" {
		t.Errorf("launchesOf: %q, %q", launchesOf(1), launchesOf(2))
	}
}
