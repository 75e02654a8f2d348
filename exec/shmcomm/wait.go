package shmcomm

import (
	"sync/atomic"
	"time"
)

// How a Waiter waits: ranks on one host usually answer within microseconds
// (the peer is in the same step of the same collective), so it spins first,
// then yields the CPU (a peer sharing the core gets it), then sleeps on a
// futex. A sleep never lasts longer than SleepMax, so the caller checks its
// abort conditions (a lost peer, a cancelled context) at least that often.
const (
	SpinFor  = 50 * time.Microsecond  // spinning on the ring's words
	YieldFor = 500 * time.Microsecond // then yielding between looks
	SleepMax = time.Millisecond       // then futex sleeps of at most this
)

// Waiter is one wait's progress through spin, yield and sleep; the zero
// value starts a new wait. Call Reset after the awaited thing happened.
type Waiter struct {
	start time.Time
}

// Reset starts the next wait from spinning again.
func (w *Waiter) Reset() { w.start = time.Time{} }

// wait waits one step for ready: it returns when ready is true or after a
// bounded step (at most SleepMax), whichever is first.
func (w *Waiter) wait(seq, waiters *uint32, ready func() bool) {
	if w.start.IsZero() {
		w.start = time.Now()
	}
	switch since := time.Since(w.start); {
	case since < SpinFor:
		for i := 0; i < 256; i++ {
			if ready() {
				return
			}
		}
	case since < SpinFor+YieldFor:
		if !ready() {
			osYield()
		}
	default:
		atomic.AddUint32(waiters, 1)
		s := atomic.LoadUint32(seq)
		if !ready() {
			futexWait(seq, s, SleepMax)
		}
		atomic.AddUint32(waiters, ^uint32(0))
	}
}
