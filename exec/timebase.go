package exec

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/partbench/partbench/exec/rendezvous"
)

// ClockSync is how a rank's times were put on rank 0's clock: its wall
// clock's offset to rank 0's, estimated once at start-up by pinging rank 0
// over the rendezvous session (rendezvous.ClockEstimate: the ping with the
// smallest round trip; the offset is within half that round trip of the
// truth), and the offset applied.
type ClockSync struct {
	rendezvous.ClockEstimate
	// SameHost: the rank runs on rank 0's host, where every process reads
	// one system wall clock, so no offset is applied (the estimate is kept
	// as a check: it should be within its uncertainty of 0). Rank 0 too.
	SameHost bool `json:"same_host"`
	// AppliedS is the offset added to this rank's wall times: 0 on rank
	// 0's host, OffsetS on another.
	AppliedS float64 `json:"applied_s"`
}

// clockBase turns this rank's wall times into seconds on rank 0's clock
// from an epoch rank 0 chose (so that the numbers stay small and exact).
type clockBase struct {
	epochNS   int64 // rank 0's wall clock at the epoch, Unix nanoseconds
	appliedNS int64 // added to this rank's wall times
}

// at is t (its wall reading) on rank 0's clock, in seconds from the epoch.
func (b clockBase) at(t time.Time) float64 {
	return float64(t.UnixNano()+b.appliedNS-b.epochNS) / 1e9
}

// syncClock estimates this rank's clock against rank 0's (every rank
// calls it, in the collectives' order: it ends with a broadcast of rank
// 0's epoch). host is this rank's host name as it joined.
func syncClock(ctx context.Context, sess *rendezvous.Session, host string) (ClockSync, clockBase, error) {
	est, err := sess.EstimateClockOffset(ctx, 0)
	if err != nil {
		return ClockSync{}, clockBase{}, fmt.Errorf("clock offset to rank 0: %w", err)
	}
	cs := ClockSync{ClockEstimate: est, SameHost: sess.Rank() == 0}
	if peers := sess.Peers(); len(peers) > 0 && peers[0].Host == host {
		cs.SameHost = true
	}
	var b clockBase
	if !cs.SameHost {
		cs.AppliedS, b.appliedNS = est.OffsetS, int64(math.Round(est.OffsetS*1e9))
	}
	epoch, err := sess.Broadcast(ctx, strconv.AppendInt(nil, time.Now().UnixNano(), 10))
	if err != nil {
		return ClockSync{}, clockBase{}, fmt.Errorf("clock epoch from rank 0: %w", err)
	}
	if b.epochNS, err = strconv.ParseInt(string(epoch), 10, 64); err != nil {
		return ClockSync{}, clockBase{}, fmt.Errorf("clock epoch from rank 0: %q is not Unix nanoseconds", epoch)
	}
	return cs, b, nil
}

// TimeBase says from which start a run's TTFT, TPOT and TPS were timed.
type TimeBase struct {
	// OneStart: from each iteration's earliest start over all ranks (the
	// first rank out of the barrier), every rank's times on rank 0's clock;
	// false: from each last-stage rank's own start (results without
	// RankResult.StartS).
	OneStart bool `json:"one_start"`
	// SameHost: every rank ran on rank 0's host and read its wall clock;
	// no offset was applied.
	SameHost bool `json:"same_host"`
	// OffsetUncertaintyS is the largest uncertainty of an offset applied
	// (0 on one host): two ranks' times on rank 0's clock are within twice
	// it of the truth.
	OffsetUncertaintyS float64 `json:"offset_uncertainty_s"`
	// EstimateMaxAbsS is the largest |offset| estimated for a rank on rank
	// 0's host, where the truth is 0 (a check of the estimator: within its
	// uncertainty), and EstimateMaxRTTS the largest of their round trips.
	EstimateMaxAbsS float64 `json:"estimate_max_abs_s"`
	EstimateMaxRTTS float64 `json:"estimate_max_rtt_s"`
	// StartSpreadS is the median over iterations of the latest rank's
	// start minus the earliest's: what a rank's own start would leave out.
	StartSpreadS float64 `json:"start_spread_s"`
	// Note says it in words, for the run's notes.
	Note string `json:"note"`
}

// timeBase describes how Aggregate timed results' iterations.
func timeBase(results []RankResult, oneStart bool, spread []float64) TimeBase {
	if !oneStart {
		return TimeBase{Note: "TTFT is timed from each last-stage rank's own start of an iteration (these results carry no common start): a last stage that left the barrier late leaves out the earlier stages' work before its start"}
	}
	tb := TimeBase{OneStart: true, SameHost: true, StartSpreadS: median(spread)}
	var others, pings int
	for _, r := range results {
		if r.Clock == nil || r.Rank == 0 {
			continue
		}
		if r.Clock.SameHost {
			tb.EstimateMaxAbsS = math.Max(tb.EstimateMaxAbsS, math.Abs(r.Clock.OffsetS))
			tb.EstimateMaxRTTS = math.Max(tb.EstimateMaxRTTS, r.Clock.RTTS)
			continue
		}
		tb.SameHost = false
		others, pings = others+1, max(pings, r.Clock.Pings)
		tb.OffsetUncertaintyS = math.Max(tb.OffsetUncertaintyS, r.Clock.UncertaintyS)
	}
	clock := fmt.Sprintf("all %d ranks on rank 0's host read its wall clock, no offset applied", len(results))
	if len(results) > 1 {
		clock += fmt.Sprintf(" (their ping estimates were within %s of it, round trips ≤ %s)", micros(tb.EstimateMaxAbsS), micros(tb.EstimateMaxRTTS))
	}
	if !tb.SameHost {
		clock = fmt.Sprintf("%d ranks on other hosts corrected by their wall clocks' offsets to rank 0's, estimated at start-up from the fastest of %d pings each (each within ±%s, so TTFT within ±%s; drift during the run not corrected)",
			others, pings, micros(tb.OffsetUncertaintyS), micros(2*tb.OffsetUncertaintyS))
	}
	tb.Note = fmt.Sprintf("TTFT is timed from an iteration's earliest start over all ranks (the first out of the barrier) to the last stage's first token, TPOT between the last stage's step ends, on rank 0's clock: %s; the ranks' starts spread by %s (median over iterations)", clock, micros(tb.StartSpreadS))
	return tb
}

// micros formats seconds as microseconds.
func micros(s float64) string { return strconv.FormatFloat(s*1e6, 'f', 1, 64) + " µs" }
