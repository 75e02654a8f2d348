package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// ClockSample is one ping to rank 0: this rank's wall clock when the ping
// left (Sent) and when rank 0's answer arrived (Received), and rank 0's
// wall clock when it answered (Remote), read between the two.
type ClockSample struct {
	Sent, Remote, Received time.Time
}

// ClockEstimate is this rank's wall clock against rank 0's, from the sample
// with the smallest round trip (Cristian's algorithm): rank 0 read its clock
// at some instant between Sent and Received, so taking the midpoint is
// wrong by at most half the round trip, whatever the two directions' delays.
type ClockEstimate struct {
	// OffsetS is rank 0's clock minus this rank's: add it to a time read
	// here to read it on rank 0's clock. Remote − (Sent + Received)/2.
	OffsetS float64 `json:"offset_s"`
	// UncertaintyS bounds OffsetS's error: half RTTS.
	UncertaintyS float64 `json:"uncertainty_s"`
	// RTTS is the chosen sample's round trip (Received − Sent).
	RTTS float64 `json:"rtt_s"`
	// Pings is the number of samples it was chosen from.
	Pings int `json:"pings"`
}

// EstimateClock is the estimate from the sample with the smallest round
// trip; an error when there is none or a sample's round trip is negative
// (a clock stepped backwards during it).
func EstimateClock(samples []ClockSample) (ClockEstimate, error) {
	if len(samples) == 0 {
		return ClockEstimate{}, errors.New("clock estimate: no ping samples")
	}
	best := -1
	bestRTT := time.Duration(math.MaxInt64)
	for i, s := range samples {
		rtt := s.Received.Sub(s.Sent)
		if rtt < 0 {
			return ClockEstimate{}, fmt.Errorf("clock estimate: ping %d came back %v before it left (the wall clock stepped back)", i, -rtt)
		}
		if rtt < bestRTT {
			best, bestRTT = i, rtt
		}
	}
	s := samples[best]
	// In nanoseconds, as integers: wall times are ~1.8e18 ns, beyond a
	// float64's exact integers, but their differences are small.
	mid := s.Sent.UnixNano() + (s.Received.UnixNano()-s.Sent.UnixNano())/2
	return ClockEstimate{
		OffsetS:      float64(s.Remote.UnixNano()-mid) / 1e9,
		UncertaintyS: bestRTT.Seconds() / 2,
		RTTS:         bestRTT.Seconds(),
		Pings:        len(samples),
	}, nil
}

// DefaultClockPings is how many pings EstimateClockOffset makes.
const DefaultClockPings = 8

// EstimateClockOffset pings rank 0 n times (0: DefaultClockPings), one at a
// time, and estimates this rank's clock against rank 0's; rank 0 returns
// the zero estimate at once. Any rank may call it at any time, outside the
// collectives' order: rank 0 answers pings from its read loops. Each ping
// waits at most Options.LostAfter.
func (s *Session) EstimateClockOffset(ctx context.Context, n int) (ClockEstimate, error) {
	if s.rank == 0 {
		return ClockEstimate{}, nil
	}
	if n <= 0 {
		n = DefaultClockPings
	}
	samples := make([]ClockSample, 0, n)
	for i := 0; i < n; i++ {
		sm, err := s.ping(ctx)
		if err != nil {
			return ClockEstimate{}, err
		}
		samples = append(samples, sm)
	}
	return EstimateClock(samples)
}

// pong is rank 0's answer to ping Seq, with the time this rank received it.
type pong struct {
	seq      uint64
	remote   time.Time
	received time.Time
}

// ping sends one ping to rank 0 and waits for its answer.
func (s *Session) ping(ctx context.Context) (ClockSample, error) {
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	s.pingSeq++
	seq := s.pingSeq
	for drained := false; !drained; { // answers to abandoned pings
		select {
		case <-s.pongs:
		default:
			drained = true
		}
	}
	b, err := encode(&frame{Type: tPing, Seq: seq})
	if err != nil {
		return ClockSample{}, err
	}
	sent := time.Now()
	if err := s.conns[0].writeRaw(b, s.o.LostAfter); err != nil {
		s.connLost(s.conns[0], err)
		return ClockSample{}, s.endErr()
	}
	timer := time.NewTimer(s.o.LostAfter)
	defer timer.Stop()
	for {
		select {
		case p := <-s.pongs:
			if p.seq != seq {
				continue // the answer to an abandoned ping
			}
			return ClockSample{Sent: sent, Remote: p.remote, Received: p.received}, nil
		case <-s.done:
			return ClockSample{}, s.endErr()
		case <-ctx.Done():
			return ClockSample{}, fmt.Errorf("rendezvous: clock ping #%d: %w", seq, ctx.Err())
		case <-timer.C:
			return ClockSample{}, fmt.Errorf("rendezvous: rank 0 did not answer clock ping #%d within %v", seq, s.o.LostAfter)
		}
	}
}

// onPing answers a ping with rank 0's wall clock (rank 0's read loop).
func (s *Session) onPing(c *conn, f *frame) {
	now := time.Now()
	b, err := encode(&frame{Type: tPong, Seq: f.Seq, Time: now.UnixNano()})
	if err != nil {
		return
	}
	if err := c.writeRaw(b, s.o.LostAfter); err != nil {
		s.connLost(c, err)
	}
}

// onPong hands rank 0's answer to the waiting ping (a rank's read loop);
// an answer nobody waits for any more is dropped.
func (s *Session) onPong(f *frame, received time.Time) {
	select {
	case s.pongs <- pong{seq: f.Seq, remote: time.Unix(0, f.Time), received: received}:
	default:
	}
}
