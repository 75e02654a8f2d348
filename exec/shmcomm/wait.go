package shmcomm

import (
	"runtime"
	"sync/atomic"
	"time"
)

// How a Waiter waits. Ranks on one quiet host usually answer within
// microseconds (the peer is in the same step of the same collective), so a
// wait spins first, then yields the CPU, then sleeps on a futex. On a busy
// host (more runnable threads than cores) spinning takes the CPU from the
// very peer being waited for, so the spin adapts: a Spin remembers how
// often recent waits ended within ShortWait, and spins SpinFor only while
// most did. A sleep never lasts longer than SleepMax, so the caller checks
// its abort conditions (a lost peer, a cancelled context) at least that
// often.
const (
	SpinFor   = 50 * time.Microsecond  // spinning (then as long yielding) while waits are short
	SpinBrief = 2 * time.Microsecond   // spinning (and yielding) while they are not
	ShortWait = 100 * time.Microsecond // a wait this short would have been met by spinning
	SleepMax  = time.Millisecond       // futex sleeps of at most this
)

// Spin is the adaptive part of a link's waits: the share of recent waits
// that were short, in 1/1024 (an exponential average over about 16 waits).
// The zero value starts by spinning.
type Spin struct {
	long atomic.Int64 // share of long waits, 0–1024
}

func (s *Spin) budget() time.Duration {
	if s == nil || s.long.Load() < 512 {
		return SpinFor
	}
	return SpinBrief
}

func (s *Spin) record(waited time.Duration) {
	if s == nil {
		return
	}
	x := int64(0)
	if waited > ShortWait {
		x = 1024
	}
	old := s.long.Load()
	s.long.Store(old + (x-old)/16)
}

// Waiter is one wait's progress through spin, yield and sleep; the zero
// value starts a new wait. Call Reset after the awaited thing happened.
type Waiter struct {
	Spin   *Spin // nil: always spin SpinFor
	start  time.Time
	budget time.Duration
}

// Reset records how long the wait took (for its Spin) and starts the next
// wait from spinning again.
func (w *Waiter) Reset() {
	if !w.start.IsZero() {
		w.Spin.record(time.Since(w.start))
	}
	w.start = time.Time{}
}

// wait waits one step for ready: it returns when ready is true or after a
// bounded step (at most SleepMax), whichever is first.
func (w *Waiter) wait(seq, waiters *uint32, ready func() bool) {
	if w.start.IsZero() {
		w.start, w.budget = time.Now(), w.Spin.budget()
	}
	switch since := time.Since(w.start); {
	case since < w.budget:
		for i := 0; i < 256; i++ {
			if ready() {
				return
			}
		}
		runtime.Gosched() // a peer may be a goroutine of this process
	case since < 2*w.budget:
		if !ready() {
			runtime.Gosched()
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
