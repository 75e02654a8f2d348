package server

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/partbench/partbench/remote/wire"
)

// callClock is a raw-TCP connection's call deadline, armed without a timer
// operation per call. Setting a deadline adds or moves a runtime timer, and
// a timer earlier than the scheduler's next wake-up wakes a thread (the
// network poller or an idle one): a decode step of a few bytes paid two
// such wake-ups on the server (the deadline cleared for the wait between
// calls, set again for the call) and a third for its context's timer.
// Instead the deadline armed is moved only when it would end a call early:
// each call's context gets at least CallTimeout and at most CallTimeout +
// slack (the connection replyGrace more), and it stays armed between calls (a
// wait between calls that outlives it clears it: see idle).
type callClock struct {
	c        net.Conn        // nil: a gRPC session stream's clock (contexts only)
	parent   context.Context // the calls' contexts derive from it
	timeout  time.Duration
	slack    time.Duration
	armed    time.Time       // the connection's deadline, both ways; zero: none
	ctx      context.Context // ends at armed
	cancel   context.CancelFunc
	readMove bool // a read deadline other than armed was set since
}

func newCallClock(c net.Conn, timeout time.Duration) *callClock {
	return newCallClockIn(context.Background(), c, timeout)
}

// newCallClockIn is newCallClock whose calls' contexts derive from parent.
func newCallClockIn(parent context.Context, c net.Conn, timeout time.Duration) *callClock {
	return &callClock{c: c, parent: parent, timeout: timeout, slack: wire.TimeoutSlack(timeout), ctx: parent, cancel: func() {}}
}

// start begins a call at now and returns its context (the caller cancels
// it when the call ends): its deadline is between now + timeout and now +
// timeout + slack, the connection's replyGrace later.
func (k *callClock) start(now time.Time) (context.Context, context.CancelFunc) {
	if k.readMove || k.armed.IsZero() || k.armed.Before(now.Add(k.timeout)) {
		k.arm(now.Add(k.timeout + k.slack))
	}
	return context.WithCancel(k.ctx)
}

// arm sets the calls' deadline d (zero: none): the context's, and the
// connection's replyGrace later, so that a call its context ended can still
// write its error reply rather than find the connection timed out.
func (k *callClock) arm(d time.Time) {
	k.cancel()
	k.armed, k.readMove = d, false
	if d.IsZero() {
		if k.c != nil {
			k.c.SetDeadline(d)
		}
		k.ctx, k.cancel = k.parent, func() {}
		return
	}
	if k.c != nil {
		k.c.SetDeadline(d.Add(k.replyGrace()))
	}
	k.ctx, k.cancel = context.WithDeadline(k.parent, d)
}

// replyGrace is how long after a call's context ends its connection's
// deadline passes: the slack, at least a second (a busy machine may take
// that long to run the goroutine that writes the reply).
func (k *callClock) replyGrace() time.Duration { return max(k.slack, time.Second) }

// movedRead records that the read deadline was set apart from the call's
// (the next call arms both again).
func (k *callClock) movedRead() { k.readMove = true }

// idle handles an error of the wait for the next call, before any of its
// bytes were taken: a deadline left armed by the previous call (or a
// request's read timeout) is cleared and the wait goes on (true); any other
// error ends the connection (false).
func (k *callClock) idle(err error) bool {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || (k.armed.IsZero() && !k.readMove) {
		return false
	}
	k.arm(time.Time{})
	return true
}

// stop releases the clock's context when the connection ends.
func (k *callClock) stop() { k.cancel() }
