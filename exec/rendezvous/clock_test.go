package rendezvous

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// fakePing is one ping on a fake clock: this rank's clock reads the true
// time, rank 0's reads it plus offset; the ping takes fwd to reach rank 0
// and back to return.
func fakePing(sent time.Time, offset, fwd, back time.Duration) ClockSample {
	return ClockSample{Sent: sent, Remote: sent.Add(fwd + offset), Received: sent.Add(fwd + back)}
}

func TestEstimateClockFakeClock(t *testing.T) {
	t0 := time.Unix(1_790_000_000, 123_456_789) // a wall time of 2026, ns precision
	const us = time.Microsecond
	for _, c := range []struct {
		name   string
		offset time.Duration
		pings  [][2]time.Duration // forward, back delays
		// want: from the ping with the smallest round trip (f, b), offset
		// + (f − b)/2, uncertainty (f + b)/2, round trip f + b.
		wantOffset, wantUnc, wantRTT time.Duration
	}{
		// Rank 0 37.5 ms ahead. Round trips 6000, 800, 6000 µs: the second,
		// f 200, b 600 → 37.5 ms + (200 − 600)/2 µs = 37.3 ms, ±400 µs.
		{"ahead, slow way back", 37500 * us, [][2]time.Duration{{5000 * us, 1000 * us}, {200 * us, 600 * us}, {3000 * us, 3000 * us}},
			37300 * us, 400 * us, 800 * us},
		// Rank 0 2.1 s behind. Round trips 300, 1200, 250: the third, all
		// its delay on the way there (f 250, b 0) → −2.1 s + 125 µs, ±125
		// µs: the error is the whole bound, never more.
		{"behind, one-sided", -2100 * time.Millisecond, [][2]time.Duration{{150 * us, 150 * us}, {1100 * us, 100 * us}, {250 * us, 0}},
			-2100*time.Millisecond + 125*us, 125 * us, 250 * us},
		// One ping, symmetric: exact.
		{"symmetric", 3 * us, [][2]time.Duration{{40 * us, 40 * us}}, 3 * us, 40 * us, 80 * us},
	} {
		t.Run(c.name, func(t *testing.T) {
			var samples []ClockSample
			sent := t0
			for _, p := range c.pings {
				samples = append(samples, fakePing(sent, c.offset, p[0], p[1]))
				sent = sent.Add(10 * time.Millisecond)
			}
			got, err := EstimateClock(samples)
			if err != nil {
				t.Fatal(err)
			}
			near := func(a float64, b time.Duration) bool { return math.Abs(a-b.Seconds()) < 1e-9 }
			if !near(got.OffsetS, c.wantOffset) || !near(got.UncertaintyS, c.wantUnc) || !near(got.RTTS, c.wantRTT) || got.Pings != len(c.pings) {
				t.Errorf("estimate %+v, want offset %v ± %v, round trip %v, %d pings", got, c.wantOffset, c.wantUnc, c.wantRTT, len(c.pings))
			}
			if err := math.Abs(got.OffsetS - c.offset.Seconds()); err > got.UncertaintyS+1e-9 {
				t.Errorf("estimate %v off the true offset %v by %v, beyond its bound %v", got.OffsetS, c.offset.Seconds(), err, got.UncertaintyS)
			}
		})
	}
}

func TestEstimateClockRefusesBadSamples(t *testing.T) {
	if _, err := EstimateClock(nil); err == nil || !strings.Contains(err.Error(), "no ping samples") {
		t.Errorf("no samples: %v", err)
	}
	now := time.Unix(1_790_000_000, 0)
	back := ClockSample{Sent: now, Remote: now, Received: now.Add(-time.Millisecond)}
	if _, err := EstimateClock([]ClockSample{back}); err == nil || !strings.Contains(err.Error(), "stepped back") {
		t.Errorf("a round trip below 0: %v", err)
	}
}

// Over loopback in one process every rank reads one wall clock: the
// estimates of ranks 1 and 2 are within their bound of 0, rank 0's is
// zero, and pings are answered while rank 0 waits in a collective (the
// barrier it entered first), which then completes.
func TestEstimateClockOffsetOneClock(t *testing.T) {
	ss, errs, _ := joinAll(t, 3, patient)
	noErr(t, errs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ests := make([]ClockEstimate, 3)
	noErr(t, each(ss, func(r int, s *Session) error {
		if r == 0 {
			return s.Barrier(ctx)
		}
		var err error
		if ests[r], err = s.EstimateClockOffset(ctx, 5); err != nil {
			return err
		}
		return s.Barrier(ctx)
	}))
	zero, err := ss[0].EstimateClockOffset(ctx, 5)
	if err != nil || zero != (ClockEstimate{}) {
		t.Errorf("rank 0: %+v, %v; want the zero estimate", zero, err)
	}
	for r := 1; r < 3; r++ {
		e := ests[r]
		// 1 µs of slack: the round trip is read on the monotonic clock, the
		// offset on the wall clock.
		if e.Pings != 5 || e.RTTS <= 0 || math.Abs(e.OffsetS) > e.UncertaintyS+1e-6 || e.UncertaintyS != e.RTTS/2 {
			t.Errorf("rank %d: %+v; want 5 pings, |offset| ≤ uncertainty = round trip / 2", r, e)
		}
	}
}
