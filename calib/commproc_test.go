//go:build unix

package calib

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// With LinkWorkerEnv set, the test binary is one rank of a process link
// measurement started by measureLinkProcs.
func TestMain(m *testing.M) {
	if spec := os.Getenv(LinkWorkerEnv); spec != "" {
		if err := LinkWorker(context.Background(), spec, os.Stdout); err != nil {
			fmt.Println("err:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Three process ranks time an all_reduce over all of them and over a pair,
// and a sendrecv, at two sizes, twice each: rank 0 reports a positive time
// for every group, size and repeat.
func TestMeasureLinkProcs(t *testing.T) {
	groups := []commGroup{{opAllReduce, []int{0, 1, 2}}, {opAllReduce, []int{0, 1}}, {opSendRecv, []int{0, 1}}}
	sizes := []int64{16, 4096}
	times, err := measureLinkProcs(context.Background(), []string{os.Args[0], "-test.run=^$"}, 3, groups, sizes, 2, 200*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	for gi := range groups {
		if len(times[gi]) != len(sizes) {
			t.Fatalf("group %d: %d sizes, want %d", gi, len(times[gi]), len(sizes))
		}
		for si := range sizes {
			if len(times[gi][si]) != 2 {
				t.Fatalf("group %d size %d: %d repeats, want 2", gi, si, len(times[gi][si]))
			}
			for _, v := range times[gi][si] {
				if !(v > 0 && v < 1) {
					t.Fatalf("group %d size %d: time %g s, want in (0, 1)", gi, si, v)
				}
			}
		}
	}
}

// Four process ranks time the pairs' all_reduce back to back and after a
// compute burst: the burst group's times hold, per repeat, the all_reduce's
// time, the burst's wall time and the pair {0, 1}'s exit lag (gathered
// from rank 1's stamps while the pair {2, 3} bursts unstamped), all
// positive, the burst's at least its work's (4 000 iterations: well over
// 1 µs on any machine partbench runs on).
func TestMeasureLinkProcsBursts(t *testing.T) {
	all := []int{0, 1, 2, 3}
	groups := []commGroup{{opAllReducePairs, all}, {opAllReduceBurst, all}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	times, err := measureLinkProcsBursts(ctx, []string{os.Args[0], "-test.run=^$"}, 4, groups, []int{0, 4000}, []int64{256}, 2, 200*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(times[0][0]) != 2 || len(times[1][0]) != 6 {
		t.Fatalf("times %v: want 2 back-to-back repeats and 2 (all_reduce, burst, exit lag) triples", times)
	}
	for i, v := range times[1][0] {
		if !(v > 0 && v < 1) || (i%3 == 1 && v < 1e-6) {
			t.Fatalf("after a burst, value %d: %g s", i, v)
		}
	}
}

// Three process ranks pass a message around: rank 0 reports a positive
// time per hop for each size and repeat.
func TestMeasureLinkProcsRing(t *testing.T) {
	groups := []commGroup{{opRing, []int{0, 1, 2}}}
	times, err := measureLinkProcs(context.Background(), []string{os.Args[0], "-test.run=^$"}, 3, groups, []int64{64}, 2, 200*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(times[0][0]) != 2 {
		t.Fatalf("times %v: want 2 repeats", times)
	}
	for _, v := range times[0][0] {
		if !(v > 0 && v < 1) {
			t.Fatalf("hop time %g s, want in (0, 1)", v)
		}
	}
}

// Four process ranks time the pair {0, 1}'s all_reduce after a compute
// burst while ranks 2 and 3 sleep in a receive (released by rank 0 after
// each sample): the group's times hold, per repeat, the all_reduce's time,
// the burst's wall time and the pair's exit lag, all positive, and the run ends (a sleeper
// left waiting would hang it until the context's deadline).
func TestMeasureLinkProcsBurstBesideIdle(t *testing.T) {
	groups := []commGroup{{opAllReducePairs, []int{0, 1, 2, 3}}, {opAllReduceBurstIdle, []int{0, 1, 2, 3}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	times, err := measureLinkProcsBursts(ctx, []string{os.Args[0], "-test.run=^$"}, 4, groups, []int{0, 4000}, []int64{256}, 2, 200*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(times[0][0]) != 2 || len(times[1][0]) != 6 {
		t.Fatalf("times %v: want 2 back-to-back repeats and 2 (all_reduce, burst, exit lag) triples", times)
	}
	for i, v := range times[1][0] {
		if !(v > 0 && v < 1) || (i%3 == 1 && v < 1e-6) {
			t.Fatalf("beside idle ranks, value %d: %g s", i, v)
		}
	}
}

// Four process ranks run the replica-spread blocks (bursts and pair
// all_reduces, every pair at once): rank 0 reports one wall time per
// repeat, the whole block — sized by the pilot to the sample's least
// duration, 2 ms, from two cycles' time (a slow first pilot makes it
// shorter: 0.4–0.5 ms seen here), so at least 0.1 ms where one cycle's time
// per call (a burst of 4,000 ≈ 6 µs and a call) would be tens of µs —
// and under a second.
func TestMeasureLinkProcsBlocks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	groups := []commGroup{{opAllReduceBlocks, []int{0, 1, 2, 3}}}
	times, err := measureLinkProcsBursts(ctx, []string{os.Args[0], "-test.run=^$"}, 4, groups, []int{4000}, []int64{256}, 3, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 1 || len(times[0]) != 1 || len(times[0][0]) != 3 {
		t.Fatalf("times %v, want one group, one size, three blocks", times)
	}
	for _, b := range times[0][0] {
		if !(b >= 1e-4 && b < 1) {
			t.Errorf("a block of %g s, want a whole block of 0.1 ms to 1 s (times %v)", b, times[0][0])
		}
	}
}

// Four process ranks run tp4-tiny through the executor (two runs for one
// repeat): rank 0 reports every rank's collective calls of the traced
// iteration after the first — per pass 17 all_reduces and one all_gather
// over the 4, so at least 4 ranks × (17 + 3·18 − 1) calls for its prefill
// and 3 decode steps — each with a positive burst and time and, for the
// all_reduce, the rank's probe of it.
func TestMeasureInPlace(t *testing.T) {
	calls, err := measureInPlace(context.Background(), []string{os.Args[0], "-test.run=^$"}, 4, []string{"test/tp4-tiny"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 {
		t.Fatalf("%d repeats, want 1", len(calls))
	}
	if n := len(calls[0]); n < inPlaceRunsPerRepeat*4*(17+3*18-1) {
		t.Errorf("%d calls, want at least %d", n, inPlaceRunsPerRepeat*4*(17+3*18-1))
	}
	for _, c := range calls[0] {
		if (c.Kind != "all_reduce" && c.Kind != "all_gather") || c.Shape != "ranks=4" || c.Bytes <= 0 || !(c.BurstS > 0) || !(c.CallS > 0) ||
			(c.Kind == "all_reduce" && !(c.ProbeS > 0)) {
			t.Fatalf("call %+v", c)
		}
	}
}
