package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// deadlineConn records the deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (d *deadlineConn) SetDeadline(t time.Time) error { d.set = append(d.set, t); return nil }

// TestCallClockArmsRarely: every call's context gets a deadline between its
// start + timeout and start + timeout + slack, the connection the same
// max(slack, 1 s) later, and the connection's deadline is set only when the armed one would end
// the call early, after a read deadline was moved, or to clear it when the
// wait between calls outlived it.
func TestCallClockArmsRarely(t *testing.T) {
	// Times are real (a context's deadline runs a real timer): the calls
	// start at now, well inside the deadlines they check.
	const timeout = 16 * time.Second // slack = min(16 s / 16, 1 s) = 1 s
	const ms = time.Millisecond
	conn := &deadlineConn{}
	k := newCallClock(conn, timeout)
	if k.slack != time.Second {
		t.Fatalf("slack %v, want min(16 s / 16, 1 s) = 1 s", k.slack)
	}
	t0 := time.Now()
	steps := []struct {
		at    time.Duration // call start after t0
		moved bool          // a read deadline was moved before this call
		arm   time.Duration // the calls' deadline armed at this call (after t0), 0: none
	}{
		{0, false, 17 * time.Second},   // nothing armed: t0 + 16 s + 1 s
		{500 * ms, false, 0},           // 17 s ≥ 0.5 + 16 s: kept
		{1000 * ms, false, 0},          // 17 s ≥ 1 + 16 s: kept
		{1001 * ms, false, 18001 * ms}, // 17 s < 17.001 s: 1.001 + 17 s
		{1500 * ms, true, 18500 * ms},  // read deadline moved: re-armed
		{1600 * ms, false, 0},
	}
	// The connection's deadline is the armed one + max(slack, 1 s) = 1 s.
	for i, s := range steps {
		if s.moved {
			k.movedRead()
		}
		n := len(conn.set)
		now := t0.Add(s.at)
		ctx, cancel := k.start(now)
		d, ok := ctx.Deadline()
		switch {
		case s.arm == 0 && len(conn.set) != n:
			t.Errorf("call %d at +%v: deadline set to %v, want none set", i, s.at, conn.set[n:])
		case s.arm != 0 && (len(conn.set) != n+1 || !conn.set[n].Equal(t0.Add(s.arm+time.Second))):
			t.Errorf("call %d at +%v: deadlines set %v, want one at +%v", i, s.at, conn.set[n:], s.arm+time.Second)
		}
		if !ok || !d.Equal(k.armed) || d.Before(now.Add(timeout)) || d.After(now.Add(timeout+k.slack)) {
			t.Errorf("call %d at +%v: context deadline %v (set %v), want the armed %v within [+%v, +%v]", i, s.at, d.Sub(t0), ok, k.armed.Sub(t0), s.at+timeout, s.at+timeout+k.slack)
		}
		cancel()
		if ctx.Err() == nil {
			t.Errorf("call %d: its context is live after its cancel", i)
		}
	}
	// A call's cancel ends its context only: the next call's is live.
	ctx, cancel := k.start(t0.Add(1700 * ms))
	if ctx.Err() != nil {
		t.Errorf("the next call's context ended with the last: %v", ctx.Err())
	}
	cancel()

	// The wait between calls: a timeout clears the deadline and waits on;
	// an end of stream, or a timeout with nothing armed, ends it.
	n := len(conn.set)
	if !k.idle(os.ErrDeadlineExceeded) || len(conn.set) != n+1 || !conn.set[n].IsZero() || !k.armed.IsZero() {
		t.Errorf("a timeout between calls: deadlines set %v, armed %v; want one cleared", conn.set[n:], k.armed)
	}
	if k.idle(os.ErrDeadlineExceeded) {
		t.Error("a timeout with no deadline armed was taken for the armed one's")
	}
	if k.idle(io.EOF) || k.idle(errors.New("reset")) {
		t.Error("the end of the connection was taken for a timeout")
	}
	// Cleared, the next call arms again.
	n = len(conn.set)
	ctx, cancel = k.start(t0.Add(2 * time.Second))
	if len(conn.set) != n+1 || !conn.set[n].Equal(t0.Add(20*time.Second)) {
		t.Errorf("after a clear: deadlines set %v, want one at +2 s + 17 s + 1 s", conn.set[n:])
	}
	cancel()
	k.stop()
	if !errors.Is(k.ctx.Err(), context.Canceled) {
		t.Errorf("after stop the clock's context is %v, want canceled", k.ctx.Err())
	}
}
