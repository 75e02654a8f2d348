package rendezvous

import (
	"errors"
	"fmt"
	"time"
)

// ErrClosed is returned by calls on a session that was closed.
var ErrClosed = errors.New("rendezvous: session closed")

// LostRankError reports a rank whose process or host went away: its control
// connection closed without a goodbye, or it was silent for Options.LostAfter.
type LostRankError struct {
	Rank int
	Host string
	PID  int
	// Cause says how the loss showed: "connection closed", "no message for 5s", …
	Cause string
	// Forwarded is true on ranks that learned of the loss from rank 0.
	Forwarded bool
}

func (e *LostRankError) Error() string {
	msg := fmt.Sprintf("rendezvous: lost rank %d (%s, pid %d): %s", e.Rank, e.Host, e.PID, e.Cause)
	if e.Forwarded {
		msg += " (seen by rank 0)"
	}
	return msg
}

// AbortError reports a rank that aborted the run with Session.Abort, or a
// failure rank 0 found in the protocol (Rank 0 then).
type AbortError struct {
	Rank   int
	Reason string
}

func (e *AbortError) Error() string {
	return fmt.Sprintf("rendezvous: rank %d aborted: %s", e.Rank, e.Reason)
}

// JoinError reports a failed join; every rank that reached rank 0 gets the
// same Reason (world size or config hash mismatch, duplicate rank, timeout).
type JoinError struct {
	Reason string
}

func (e *JoinError) Error() string { return "rendezvous: " + e.Reason }

// StalledError reports that this rank itself did not run for For (stopped
// with SIGSTOP, a frozen VM, a starved host), longer than the others wait
// for a heartbeat: the connection failure it then saw (Seen) is the others
// counting it lost, not a fault of the rank Seen names.
type StalledError struct {
	Rank      int
	For       time.Duration
	LostAfter time.Duration
	Seen      *LostRankError
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("rendezvous: rank %d (this process) was not running for %v (stopped or starved), over the %v after which the other ranks count a silent rank lost; they ended the run (then: rank %d's connection: %s)",
		e.Rank, e.For.Round(10*time.Millisecond), e.LostAfter, e.Seen.Rank, e.Seen.Cause)
}

// PeerFailed reports whether err ended this rank only because another rank
// of the job failed: it was lost (LostRankError) or aborted the run
// (AbortError). A rank that itself stalled (StalledError) is not a peer
// failure, whatever it then saw.
func PeerFailed(err error) bool {
	var st *StalledError
	if errors.As(err, &st) {
		return false
	}
	var lost *LostRankError
	var ab *AbortError
	return errors.As(err, &lost) || errors.As(err, &ab)
}
