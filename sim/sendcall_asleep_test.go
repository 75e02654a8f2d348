package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestSendCallAtS: a send's call time by its receiver's wait, with the
// ping-pong's call 0.2 µs (awake) and 6 µs to a sleeping receiver:
// asleep only where the receiver waited strictly longer than the spin of
// its receive and the profile has the asleep entry.
func TestSendCallAtS(t *testing.T) {
	const awake, asleep = 0.2e-6, 6e-6
	for _, c := range []struct {
		name            string
		has             bool
		waited, spin, w float64
	}{
		{"waited 130 µs past a 20 µs spin: asleep", true, 130e-6, 20e-6, asleep},
		{"waited 15 µs within a 20 µs spin: caught spinning", true, 15e-6, 20e-6, awake},
		{"waited exactly the spin: not past it", true, 20e-6, 20e-6, awake},
		{"no spin (ranks above the cores), waited 1 µs: asleep", true, 1e-6, 0, asleep},
		{"no spin, the message there as the receive begins", true, 0, 0, awake},
		{"not yet receiving (−1)", true, -1, 0, awake},
		{"a profile without the asleep entry", false, 130e-6, 20e-6, awake},
	} {
		if got := sendCallAtS(awake, asleep, c.has, c.waited, c.spin); got != c.w {
			t.Errorf("%s: %g s, want %g s", c.name, got, c.w)
		}
	}
}

// TestReceiverSpinS: pp4-tiny's 4 ranks spin ReceiverSpinS (20 µs) with a
// core each or more (4 or 8 host cores) and where the profile gives no
// cores; on 2 cores they outnumber them, and the transport does not spin
// (0).
func TestReceiverSpinS(t *testing.T) {
	for _, c := range []struct {
		cores int
		want  float64
	}{{0, 20e-6}, {8, 20e-6}, {4, 20e-6}, {2, 0}} {
		if got := receiverSpinS(coresPlan(t, "test/pp4-tiny", c.cores, nil, nil)); got != c.want {
			t.Errorf("4 ranks on %d cores: spin %g s, want %g s", c.cores, got, c.want)
		}
	}
}

// sendCallEntry is a send-call entry of kind at size of tS seconds,
// measured with 2 ranks on the host.
func sendCallEntry(kind string, size int64, tS float64) configs.OpTime {
	return opEntry(kind, "ranks=2", size, 0, tS, 2)
}

// pp4Sends estimates test/pp4-tiny with mb micro-batches on a host of
// cores cores with times as its op times, and returns its send slices
// (every rank, in the timeline's order: by rank, then start).
func pp4Sends(t *testing.T, mb, cores int, times ...configs.OpTime) []Slice {
	t.Helper()
	return pp4SendsOpts(t, mb, cores, Options{}, times...)
}

// pp4SendsOpts is pp4Sends estimated with opts (EveryRank set).
func pp4SendsOpts(t *testing.T, mb, cores int, opts Options, times ...configs.OpTime) []Slice {
	t.Helper()
	plan := coresPlan(t, "test/pp4-tiny", cores, times, func(c *configs.Config) { c.Parallel.Microbatches = mb })
	opts.EveryRank = true
	e, err := EstimatePlan(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []Slice
	for _, sl := range e.Timeline.All() {
		if sl.Op.Kind == partition.Send {
			out = append(out, sl)
		}
	}
	return out
}

// TestSendCallAsleepTimeline: pp4-tiny with one micro-batch on 2 cores
// (4 ranks above the cores: the receives do not spin, ReceiverSpinS's
// rule) with send_call entries of 1 µs and send_call_asleep of 9 µs (at
// 4 B and 4 MiB: the same at every size between). Each stage's only work
// between its receive and its send is its own (stage k + 1 is blocked in
// its receive from stage k from its start in the prefill, and from its
// own send of the step before in every decode step; stage 0 in its
// receive of the last stage's tokens since its send), so every receiver
// has waited when its message leaves, and every send, prefill and decode,
// is priced asleep: its slice (launch + call) 9 − 1 = 8 µs longer than
// with the send_call entries alone. Those alone — a profile of an older
// calibrate — price every send as before: 1 µs longer than without any
// entry (TestSendCall's rule).
func TestSendCallAsleepTimeline(t *testing.T) {
	awake := []configs.OpTime{sendCallEntry(configs.SendCallKind, 4, 1e-6), sendCallEntry(configs.SendCallKind, 4<<20, 1e-6)}
	both := append(awake[:2:2], sendCallEntry(configs.SendCallAsleepKind, 4, 9e-6), sendCallEntry(configs.SendCallAsleepKind, 4<<20, 9e-6))
	none, a, b := pp4Sends(t, 1, 2), pp4Sends(t, 1, 2, awake...), pp4Sends(t, 1, 2, both...)
	if len(a) == 0 || len(a) != len(b) || len(a) != len(none) {
		t.Fatalf("sends: %d without entries, %d awake only, %d with both", len(none), len(a), len(b))
	}
	dur := func(sl Slice) float64 { return sl.EndS - sl.StartS }
	decode := 0
	for i := range a {
		if a[i].Rank != b[i].Rank || a[i].Op.Name != b[i].Op.Name || a[i].Phase != b[i].Phase {
			t.Fatalf("send %d: %d %s %s awake only, %d %s %s with both", i, a[i].Rank, a[i].Phase, a[i].Op.Name, b[i].Rank, b[i].Phase, b[i].Op.Name)
		}
		if a[i].Phase == partition.Decode {
			decode++
		}
		if d := dur(a[i]) - dur(none[i]); math.Abs(d-1e-6) > 1e-12 {
			t.Errorf("send %d (rank %d, %s %s): awake entries add %.6g s, want 1 µs", i, a[i].Rank, a[i].Phase, a[i].Op.Name, d)
		}
		if d := dur(b[i]) - dur(a[i]); math.Abs(d-8e-6) > 1e-12 {
			t.Errorf("send %d (rank %d, %s %s): the asleep entries add %.6g s, want 8 µs (its receiver asleep)", i, b[i].Rank, b[i].Phase, b[i].Op.Name, d)
		}
	}
	if decode == 0 {
		t.Error("no decode send compared")
	}
}

// TestSendCallAsleepMicrobatches: pp4-tiny with two micro-batches on 2
// cores, entries as TestSendCallAsleepTimeline's. The simulation runs a
// rank on until it blocks, so stage k sends micro-batch 1 while micro-
// batch 0 still waits in the channel for stage k + 1, which takes that one
// first: the receiver is not waiting for micro-batch 1's message (in the
// run it computes micro-batch 0 as it comes), and the send is priced
// awake. In the prefill, then, each of stages 0–2's sends to the next
// stage is 8 µs longer with the asleep entries for micro-batch 0 (the
// receiver blocked in its receive since its start, or since its send of
// the micro-batch before) and unchanged for micro-batch 1.
func TestSendCallAsleepMicrobatches(t *testing.T) {
	awake := []configs.OpTime{sendCallEntry(configs.SendCallKind, 4, 1e-6), sendCallEntry(configs.SendCallKind, 4<<20, 1e-6)}
	both := append(awake[:2:2], sendCallEntry(configs.SendCallAsleepKind, 4, 9e-6), sendCallEntry(configs.SendCallAsleepKind, 4<<20, 9e-6))
	a, b := pp4Sends(t, 2, 2, awake...), pp4Sends(t, 2, 2, both...)
	if len(a) != len(b) {
		t.Fatalf("sends: %d awake only, %d with both", len(a), len(b))
	}
	seen := map[int]int{}
	for i := range a {
		sl := b[i]
		if sl.Phase != partition.Prefill || sl.Op.Peer != sl.Rank+1 {
			continue
		}
		want := 8e-6
		if sl.Op.Microbatch == 1 {
			want = 0
		}
		seen[sl.Op.Microbatch]++
		if d := (sl.EndS - sl.StartS) - (a[i].EndS - a[i].StartS); math.Abs(d-want) > 1e-12 {
			t.Errorf("prefill send of rank %d, micro-batch %d: the asleep entries add %.6g s, want %.6g s", sl.Rank, sl.Op.Microbatch, d, want)
		}
	}
	if seen[0] != 3 || seen[1] != 3 {
		t.Errorf("stage-to-stage prefill sends per micro-batch %v, want 3 of each", seen)
	}
}

// TestSendCallAsleepCross: pp4-tiny with one micro-batch on 2 cores, its
// 4 ranks bound two to a CPU (topology.PairedCPU: ranks 0 and 1 on CPU 0,
// 2 and 3 on CPU 1), entries as TestSendCallAsleepTimeline's (send_call
// 1 µs, send_call_asleep 9 µs) and send_call_asleep_cross 4 µs. Every
// send's receiver is asleep (that test's argument), so a send between
// CPUs — 1 → 2, and 3 → 0 (the last stage's tokens) — is 9 − 4 = 5 µs
// shorter with the cross entry, and a send within one (0 → 1, 2 → 3)
// unchanged. Priced unbound (`--bind-to none`: no CPU is a rank's own)
// every send keeps the asleep entry; on 4 cores the ranks are not bound
// two to a CPU and the cross entry is not used either.
func TestSendCallAsleepCross(t *testing.T) {
	awake := []configs.OpTime{sendCallEntry(configs.SendCallKind, 4, 1e-6), sendCallEntry(configs.SendCallKind, 4<<20, 1e-6)}
	asleep := append(awake[:2:2], sendCallEntry(configs.SendCallAsleepKind, 4, 9e-6), sendCallEntry(configs.SendCallAsleepKind, 4<<20, 9e-6))
	cross := append(asleep[:4:4], sendCallEntry(configs.SendCallAsleepCrossKind, 4, 4e-6), sendCallEntry(configs.SendCallAsleepCrossKind, 4<<20, 4e-6))
	sends := func(cores int, unbound bool, times []configs.OpTime) []Slice {
		return pp4SendsOpts(t, 1, cores, Options{Unbound: unbound}, times...)
	}
	dur := func(sl Slice) float64 { return sl.EndS - sl.StartS }
	for _, c := range []struct {
		name    string
		cores   int
		unbound bool
		paired  bool
	}{{"2 cores, bound", 2, false, true}, {"2 cores, unbound", 2, true, false}, {"4 cores", 4, false, false}} {
		a, b := sends(c.cores, c.unbound, asleep), sends(c.cores, c.unbound, cross)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%s: %d sends with the asleep entry, %d with the cross one", c.name, len(a), len(b))
		}
		crossed := 0
		for i := range a {
			sl := b[i]
			if a[i].Rank != sl.Rank || a[i].Op.Name != sl.Op.Name || a[i].Phase != sl.Phase {
				t.Fatalf("%s: send %d differs: %d %s %s against %d %s %s", c.name, i, a[i].Rank, a[i].Phase, a[i].Op.Name, sl.Rank, sl.Phase, sl.Op.Name)
			}
			want := 0.0
			if c.paired && sl.Rank/2 != sl.Op.Peer/2 {
				want, crossed = -5e-6, crossed+1
			}
			if d := dur(sl) - dur(a[i]); math.Abs(d-want) > 1e-12 {
				t.Errorf("%s: send %d → %d (%s %s): the cross entry adds %.6g s, want %.6g s", c.name, sl.Rank, sl.Op.Peer, sl.Phase, sl.Op.Name, d, want)
			}
		}
		if c.paired && crossed < 2 {
			t.Errorf("%s: %d sends between CPUs, want at least 1 → 2 and 3 → 0", c.name, crossed)
		}
	}
}
