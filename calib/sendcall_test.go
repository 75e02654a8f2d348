package calib

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/shmcomm"
	"github.com/partbench/partbench/sim"
)

// TestSendCallAsleepEntries: two sizes, three repeats of (half the round
// trip, Send call, burst) in µs:
//
//	256 B:  (60, 7, 95) (61, 9, 90) (58, 6, 100)  → calls 7, 9, 6: median 7, min 6, max 9
//	4 KiB:  (65, 8, 92) (66, 0, 96) (64, 12, 99)  → calls 8, 0 (kept as 1 ns), 12: median 8
//
// each an entry {send_call_asleep, ranks=2, size, ranks 2}; the receiver's
// wait is the median of the six bursts 90, 92, 95, 96, 99, 100: the lower
// middle one (stats' median of an even count), 95 µs. With a spin of
// 100 µs (above that wait) there is no entry and an error, as for times
// not in threes or another number of sizes.
func TestSendCallAsleepEntries(t *testing.T) {
	times := [][]float64{us(60, 7, 95, 61, 9, 90, 58, 6, 100), us(65, 8, 92, 66, 0, 96, 64, 12, 99)}
	es, waitS, err := sendCallAsleepEntries(times, []int64{256, 4096}, 2, 20e-6)
	if err != nil || len(es) != 2 {
		t.Fatalf("entries %+v, err %v; want 2", es, err)
	}
	if math.Abs(waitS-95e-6) >= 1e-12 {
		t.Errorf("receiver's wait %g s, want 95 µs", waitS)
	}
	checkCallEntries(t, es, configs.SendCallAsleepKind, 2, []callWant{{256, 7e-6, 6e-6, 9e-6}, {4096, 8e-6, 1e-9, 12e-6}})
	if es, _, err := sendCallAsleepEntries(times, []int64{256, 4096}, 2, 100e-6); err == nil || es != nil {
		t.Errorf("a wait of 95 µs under a 100 µs spin: entries %+v, err %v; want none and an error", es, err)
	}
	if _, _, err := sendCallAsleepEntries([][]float64{us(60, 7, 95, 61)}, []int64{256}, 2, 20e-6); err == nil {
		t.Error("times not in threes: no error")
	}
	if _, _, err := sendCallAsleepEntries([][]float64{us(60, 7, 95)}, []int64{256, 4096}, 2, 20e-6); err == nil {
		t.Error("1 size of 2: no error")
	}
}

// sim decides a receiver asleep by the shared-memory wait's spin, which it
// cannot import; the two must be one number, and calibrate's asleep burst
// must outlast it.
func TestReceiverSpinIsShmSpin(t *testing.T) {
	if sim.ReceiverSpinS != shmcomm.SpinFor.Seconds() {
		t.Errorf("sim.ReceiverSpinS %g s, shmcomm.SpinFor %v: want equal", sim.ReceiverSpinS, shmcomm.SpinFor)
	}
	if s := burstAloneS(SendCallAsleepBurst); s <= shmcomm.SpinFor.Seconds() {
		t.Errorf("SendCallAsleepBurst (%d iterations) takes %g s here, not longer than the spin %v", SendCallAsleepBurst, s, shmcomm.SpinFor)
	}
}

// Two process ranks run the asleep ping-pong at two sizes, twice each:
// rank 0 reports three times per repeat (half the round trip, the Send
// call, the burst), each positive and under a second, the round trip's
// half at least half the burst (it holds it) and the call under the round
// trip (it is part of it).
func TestMeasureSendCallAsleepProcs(t *testing.T) {
	sizes := []int64{16, 4096}
	times, err := measureLinkProcsBursts(context.Background(), []string{os.Args[0], "-test.run=^$"}, 2,
		[]commGroup{{opSendCallAsleep, []int{0, 1}}}, []int{16_000}, sizes, 2, 200*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 1 || len(times[0]) != len(sizes) {
		t.Fatalf("times %v: want 1 group of %d sizes", times, len(sizes))
	}
	for si, ts := range times[0] {
		if len(ts) != 6 {
			t.Fatalf("size %d: %d times, want 3 per repeat of 2", sizes[si], len(ts))
		}
		for r := 0; r < 6; r += 3 {
			half, call, wall := ts[r], ts[r+1], ts[r+2]
			for _, v := range []float64{half, call, wall} {
				if !(v > 0 && v < 1) {
					t.Fatalf("size %d repeat %d: times %v s, want each in (0, 1)", sizes[si], r/3, ts[r:r+3])
				}
			}
			if half < wall/2 || call > 2*half {
				t.Errorf("size %d repeat %d: half round trip %g s, call %g s, burst %g s: want half ≥ burst/2 and call ≤ the round trip", sizes[si], r/3, half, call, wall)
			}
		}
	}
}

// callWant is a send-call entry's expected size and its median, least and
// most time over three repeats.
type callWant struct {
	size           int64
	med, min, maxS float64
}

// checkCallEntries checks es, one entry per want in order: kind, shape
// ranks=2, measured at ranks ranks, three samples, want's size and times;
// and that they are valid op times.
func checkCallEntries(t *testing.T, es []configs.OpTime, kind string, ranks int, want []callWant) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for i, w := range want {
		e := es[i]
		if e.Kind != kind || e.Shape != "ranks=2" || e.Size != w.size || e.Ranks != ranks || e.Samples != 3 ||
			!close(e.TimeS, w.med) || !close(e.TimeMinS, w.min) || !close(e.TimeMaxS, w.maxS) {
			t.Errorf("entry %d: %+v; want %s ranks=2 size %d ranks %d, %g s (%g–%g)", i, e, kind, w.size, ranks, w.med, w.min, w.maxS)
		}
	}
	if err := configs.ValidateOpTimes("op_time", es); err != nil {
		t.Errorf("not valid op times: %v", err)
	}
}

// TestCrossPeer: bound two to a CPU (n twice the cores; topology.PairedCPU:
// ranks 2c and 2c+1 on CPU c) rank 0's first peer on another CPU is rank
// 2 — 4 ranks on 2 CPUs, 8 on 4, 6 on 3; with a CPU a rank or more (2 on
// 2, 2 on 4), more than two a CPU (16 on 2) or one CPU there is none (−1).
func TestCrossPeer(t *testing.T) {
	for _, c := range []struct{ n, cores, want int }{
		{4, 2, 2}, {8, 4, 2}, {6, 3, 2}, {2, 2, -1}, {2, 4, -1}, {16, 2, -1}, {2, 1, -1},
	} {
		if got := crossPeer(c.n, c.cores); got != c.want {
			t.Errorf("%d ranks on %d cores: %d, want %d", c.n, c.cores, got, c.want)
		}
	}
}

// TestMeasureSendCallCross: measureSendCall among 4 process ranks said to
// be on 2 cores (bound two to a CPU) adds, beside the send_call and
// send_call_asleep entries of every size, a send_call_asleep_cross entry
// per size measured at 4 ranks, each a positive time under a second, with
// a note naming rank 2; said to be on 4 cores (a CPU each) it adds none.
func TestMeasureSendCallCross(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 process ranks three times")
	}
	sizes := []int64{16, 4096}
	for _, cores := range []int{2, 4} {
		o := Options{Repeats: 2, MinSample: 200 * time.Microsecond, CommSizes: sizes, LinkArgv: []string{os.Args[0], "-test.run=^$"}}
		cal := &configs.Calibration{}
		if err := measureSendCall(context.Background(), o, 4, cores, cal); err != nil {
			t.Fatal(err)
		}
		kinds := map[string][]configs.OpTime{}
		for _, e := range cal.OpTimes {
			kinds[e.Kind] = append(kinds[e.Kind], e)
		}
		cross := kinds[configs.SendCallAsleepCrossKind]
		if len(kinds[configs.SendCallKind]) != len(sizes) {
			t.Errorf("%d cores: %d send_call entries, want %d", cores, len(kinds[configs.SendCallKind]), len(sizes))
		}
		if cores == 4 {
			if len(cross) != 0 {
				t.Errorf("4 ranks on 4 cores: cross entries %v, want none", cross)
			}
			continue
		}
		if len(cross) != len(sizes) {
			t.Fatalf("4 ranks on 2 cores: %d cross entries (notes %q), want %d", len(cross), cal.Info.Notes, len(sizes))
		}
		for i, e := range cross {
			if e.Size != sizes[i] || e.Ranks != 4 || e.Shape != "ranks=2" || !(e.TimeS > 0 && e.TimeS < 1) {
				t.Errorf("cross entry %d: %+v; want size %d, ranks 4, shape ranks=2, a time in (0, 1) s", i, e, sizes[i])
			}
		}
		noted := false
		for _, n := range cal.Info.Notes {
			noted = noted || strings.Contains(n, "on another CPU at 4 process ranks bound two to a CPU (rank 0's Send of the ping-pong with rank 2")
		}
		if !noted {
			t.Errorf("no note of the cross-CPU send calls among %q", cal.Info.Notes)
		}
	}
}
