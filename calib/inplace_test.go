package calib

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// A rank's calls from its spans, by hand (µs): the prefill's gemm 0–5,
// all_reduce 5–6 (the first collective: no call), gemm 6–9, gemm 9–10,
// all_gather 10–12 (4 after the all_reduce's return, 2 long; no probe of
// its kind), send 12–13 (no reset), recv 13–15 (a reset, no call),
// all_reduce 15.5–17 (0.5, 1.5; the rank's 1 KiB all_reduce probe, 0.7);
// two decode steps of gemm + all_reduce: 17–20, 20–21 (3, 1) and 21–30,
// 30–32 (9, 2).
func TestRankCalls(t *testing.T) {
	g := []int{0, 1}
	pre := []partition.Op{{Kind: partition.Gemm}, {Kind: partition.AllReduce, Group: g, Bytes: 1024}, {Kind: partition.Gemm}, {Kind: partition.Gemm},
		{Name: "ag", Kind: partition.AllGather, Group: g, Bytes: 1536}, {Kind: partition.Send, Peer: 1}, {Kind: partition.Recv, Peer: 1}, {Name: "ar", Kind: partition.AllReduce, Group: g, Bytes: 1024}}
	dec := []partition.Op{{Kind: partition.Gemm}, {Name: "ar", Kind: partition.AllReduce, Group: g, Bytes: 1024}}
	at := [][2]float64{{0, 5}, {5, 1}, {6, 3}, {9, 1}, {10, 2}, {12, 1}, {13, 2}, {15.5, 1.5}, {17, 3}, {20, 1}, {21, 9}, {30, 2}}
	r := pexec.RankResult{LinkProbes: []pexec.LinkProbe{{Kind: "all_reduce", Ranks: []int{0, 1}, Bytes: 1024, MedianS: 0.7e-6}}}
	for i, a := range at {
		op := pre[min(i, len(pre)-1)]
		if i >= len(pre) {
			op = dec[(i-len(pre))%len(dec)]
		}
		r.Spans = append(r.Spans, pexec.Span{Kind: string(op.Kind), StartS: a[0] * 1e-6, DurS: a[1] * 1e-6})
	}
	calls, err := rankCalls(pre, dec, r)
	if err != nil {
		t.Fatal(err)
	}
	want := []inPlaceCall{
		{Op: "prefill:ag", Kind: "all_gather", Shape: "ranks=2", Bytes: 1536, BurstS: 4e-6, CallS: 2e-6},
		{Op: "prefill:ar", Kind: "all_reduce", Shape: "ranks=2", Bytes: 1024, BurstS: 0.5e-6, CallS: 1.5e-6, ProbeBytes: 1024, ProbeS: 0.7e-6},
		{Op: "decode:ar", Kind: "all_reduce", Shape: "ranks=2", Bytes: 1024, BurstS: 3e-6, CallS: 1e-6, ProbeBytes: 1024, ProbeS: 0.7e-6},
		{Op: "decode:ar", Kind: "all_reduce", Shape: "ranks=2", Bytes: 1024, BurstS: 9e-6, CallS: 2e-6, ProbeBytes: 1024, ProbeS: 0.7e-6},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls %+v, want %d", len(calls), calls, len(want))
	}
	for i, c := range calls {
		w := want[i]
		if c.Op != w.Op || c.Kind != w.Kind || c.Shape != w.Shape || c.Bytes != w.Bytes || c.ProbeBytes != w.ProbeBytes || c.ProbeS != w.ProbeS ||
			math.Abs(c.BurstS-w.BurstS) > 1e-12 || math.Abs(c.CallS-w.CallS) > 1e-12 {
			t.Errorf("call %d: %+v, want %+v", i, c, w)
		}
	}
	// A span of another kind than its Program's op is refused.
	r.Spans[2].Kind = "rmsnorm"
	if _, err := rankCalls(pre, dec, r); err == nil || !strings.Contains(err.Error(), "traced op 2 is a rmsnorm") {
		t.Errorf("misaligned spans: %v", err)
	}
}

// Bins by the ops' median bursts (µs): op a's 5 calls after 1, b's 30
// after 4 (more than double: a bin), c's 30 after 10 (2.5×: a bin), d's 5
// after 100. The first short bin joins the one after it (a and b: 35
// calls), the last the one before (c and d: 35). One of c's calls after
// 3 µs and one of b's after 40 (each held up) stay in their op's bin: no
// call's own burst splits or bridges.
func TestInPlaceBins(t *testing.T) {
	var xs []inPlaceExcess
	for _, c := range []struct {
		op     string
		n      int
		burstS float64
	}{{"d", 5, 100e-6}, {"a", 5, 1e-6}, {"b", 29, 4e-6}, {"b", 1, 40e-6}, {"c", 29, 10e-6}, {"c", 1, 3e-6}} {
		for range c.n {
			xs = append(xs, inPlaceExcess{op: c.op, burstS: c.burstS})
		}
	}
	bins := inPlaceBins(xs)
	ops := func(b []inPlaceExcess) map[string]int {
		m := map[string]int{}
		for _, x := range b {
			m[x.op]++
		}
		return m
	}
	if len(bins) != 2 || fmt.Sprint(ops(bins[0])) != "map[a:5 b:30]" || fmt.Sprint(ops(bins[1])) != "map[c:30 d:5]" {
		t.Fatalf("bins of %v calls (%v); want a and b (35), c and d (35)", lens(bins), bins)
	}
	if b := inPlaceBins(xs[:5]); len(b) != 1 || len(b[0]) != 5 {
		t.Errorf("5 calls: bins of %v; want one of 5", lens(b))
	}
}

func lens(bins [][]inPlaceExcess) []int {
	var out []int
	for _, b := range bins {
		out = append(out, len(b))
	}
	return out
}

// Entries by hand. Back to back, the 2-rank all_reduce takes 1 µs at
// 1 KiB and 2 µs at 4 KiB. Repeat 0: 20 calls after 5 µs of 1.5 µs
// (0.5 beyond), 20 after 50 µs of 1.2 µs (0.2 beyond), one more after
// 50 µs held up 100 µs (over 20× that bin's median 1.2: left out), one at
// 8 KiB (no back-to-back time there: skipped). Repeat 1: 20 calls after
// 6 µs of 3 µs whose run's probe read the 1 KiB call 2 µs — the link in a
// state twice as slow — so 3 − 2·1 = 1 µs beyond.
//
//	after 5–6 µs (one bin: 6 ≤ 2·5): median burst 5 µs (the lower middle
//	  of 20 × 5 and 20 × 6, stats.Median); the repeats' means 0.5 and
//	  1.0 µs, their median (the lower middle) 0.5; 40 calls
//	after 50 µs: 0.2 µs, repeat 0 only, 20 calls
//
// A third repeat of 20 calls after 5 µs of 1.8 µs (0.8 beyond) makes the
// first bin's median 0.8 µs, its extremes 0.5–1.0, 60 calls.
func TestInPlaceEntries(t *testing.T) {
	b2b := func(size int64, s float64) configs.OpTime {
		return configs.OpTime{Kind: "all_reduce", Shape: "ranks=2", Size: size, TimeS: s, TimeMinS: s, TimeMaxS: s, Samples: 1, Ranks: 2}
	}
	tab := sim.NewOpTable([]configs.OpTime{b2b(1024, 1e-6), b2b(4096, 2e-6)})
	call := func(burst, call float64, bytes int64) inPlaceCall { // each burst its own op
		return inPlaceCall{Op: fmt.Sprint("op after ", burst), Kind: "all_reduce", Shape: "ranks=2", Bytes: bytes, BurstS: burst, CallS: call}
	}
	repeats := make([][]inPlaceCall, 2)
	for range 20 {
		repeats[0] = append(repeats[0], call(5e-6, 1.5e-6, 1024), call(50e-6, 1.2e-6, 1024))
		c := call(6e-6, 3e-6, 1024)
		c.ProbeBytes, c.ProbeS = 1024, 2e-6
		repeats[1] = append(repeats[1], c)
	}
	repeats[0] = append(repeats[0], call(50e-6, 100e-6, 1024), call(5e-6, 2e-6, 8192))
	es, skipped, heldUp := inPlaceEntries(repeats, tab, 2)
	if skipped != 1 || heldUp != 1 {
		t.Errorf("skipped %d, held up %d; want 1, 1", skipped, heldUp)
	}
	want := []configs.OpTime{
		{Kind: configs.InPlaceWaitKind, Shape: "all_reduce ranks=2", Size: 5000, TimeS: 0.5e-6, TimeMinS: 0.5e-6, TimeMaxS: 1e-6, Samples: 40, Ranks: 2},
		{Kind: configs.InPlaceWaitKind, Shape: "all_reduce ranks=2", Size: 50000, TimeS: 0.2e-6, TimeMinS: 0.2e-6, TimeMaxS: 0.2e-6, Samples: 20, Ranks: 2},
	}
	if len(es) != len(want) {
		t.Fatalf("entries %+v, want %+v", es, want)
	}
	for i, e := range es {
		w := want[i]
		if e.Kind != w.Kind || e.Shape != w.Shape || e.Size != w.Size || e.Samples != w.Samples || e.Ranks != w.Ranks ||
			math.Abs(e.TimeS-w.TimeS) > 1e-12 || math.Abs(e.TimeMinS-w.TimeMinS) > 1e-12 || math.Abs(e.TimeMaxS-w.TimeMaxS) > 1e-12 {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	if err := configs.ValidateOpTimes("op_time", es); err != nil {
		t.Error(err)
	}
	repeats = append(repeats, nil)
	for range 20 {
		repeats[2] = append(repeats[2], call(5e-6, 1.8e-6, 1024))
	}
	if es, _, _ := inPlaceEntries(repeats, tab, 2); len(es) != 2 || math.Abs(es[0].TimeS-0.8e-6) > 1e-12 || math.Abs(es[0].TimeMinS-0.5e-6) > 1e-12 ||
		math.Abs(es[0].TimeMaxS-1e-6) > 1e-12 || es[0].Samples != 60 {
		t.Errorf("three repeats: %+v; want the first at 0.8 µs (0.5–1.0), 60 calls", es)
	}
	// A call faster than back to back is no wait: the entry holds noWaitS.
	fast, _, _ := inPlaceEntries([][]inPlaceCall{{call(5e-6, 0.5e-6, 1024)}}, tab, 2)
	if len(fast) != 1 || fast[0].TimeS != noWaitS {
		t.Errorf("a call under back to back: %+v, want one entry of %g s", fast, noWaitS)
	}
}
