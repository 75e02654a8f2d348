package shmcomm

import (
	"runtime"
	"sync/atomic"
	"time"
)

// How a Waiter waits. Ranks on one quiet host usually answer within
// microseconds (the peer is in the same step of the same collective), so a
// wait spins first, then sleeps on a futex. On a busy host (more runnable
// threads than cores) the peer is often not running, and a spin only burns
// the CPU it needs, so the spin adapts: a Spin remembers how often recent
// spins were met, spins only while most were, and otherwise probes with
// every ProbeEvery-th wait to notice when the host is quiet again. A sleep
// never lasts longer than SleepMax, so the caller checks its abort
// conditions (a lost peer, a cancelled context) at least that often.
const (
	SpinFor    = 20 * time.Microsecond // a spin's length
	ProbeEvery = 16                    // while spins fail, one wait in this many still spins
	SleepMax   = time.Millisecond      // futex sleeps of at most this
	// SleepBoth bounds the sleeps of a wait for two links at once (data
	// from one peer, room at another): it sleeps on one side's futex only.
	SleepBoth = 50 * time.Microsecond
)

// Spin is the adaptive part of a link's waits: the share of recent spins
// that were met (the awaited bytes came while spinning), in 1/1024, an
// exponential average over about 8 spins, and the policy set by Configure.
// The zero value spins SpinFor adaptively.
type Spin struct {
	missed atomic.Int64  // share of missed spins, 0–1024
	waits  atomic.Uint64 // waits begun
	mode   SpinMode
	length time.Duration // a spin's length (0: SpinFor)
	probe  uint64        // while spins fail, one wait in this many spins (0: ProbeEvery)
	log    *waitLog      // nil unless KeepLog
}

// SpinMode is when a wait spins before it sleeps on the futex.
type SpinMode int

const (
	// SpinAdaptive spins while most recent spins were met, and one wait in
	// ProbeEvery otherwise.
	SpinAdaptive SpinMode = iota
	// SpinOff never spins: every wait sleeps on the futex at once (ranks
	// that outnumber their host's CPUs: a spinner holds the CPU its peer
	// needs).
	SpinOff
	// SpinAlways spins every wait before sleeping.
	SpinAlways
)

func (m SpinMode) String() string {
	switch m {
	case SpinOff:
		return "off"
	case SpinAlways:
		return "always"
	}
	return "adaptive"
}

// Configure sets the policy: the mode, and a spin's length (0: SpinFor).
// Call it before the waits begin.
func (s *Spin) Configure(mode SpinMode, length time.Duration) {
	s.mode, s.length = mode, length
}

func (s *Spin) budget() time.Duration {
	if s == nil {
		return SpinFor
	}
	length := s.length
	if length <= 0 {
		length = SpinFor
	}
	switch s.mode {
	case SpinOff:
		return 0
	case SpinAlways:
		return length
	}
	probe := s.probe
	if probe == 0 {
		probe = ProbeEvery
	}
	if s.missed.Load() < 512 || s.waits.Add(1)%probe == 0 {
		return length
	}
	return 0
}

func (s *Spin) record(met bool) {
	if s == nil {
		return
	}
	x := int64(1024)
	if met {
		x = 0
	}
	old := s.missed.Load()
	s.missed.Store(old + (x-old)/8)
}

// Waiter is one wait's progress from spinning to sleeping; the zero value
// starts a new wait. Call Reset after the awaited thing happened.
type Waiter struct {
	Spin *Spin // nil: always spin SpinFor first
	// Sleep is the longest futex sleep of one step (0: SleepMax): shorter
	// for a caller that also waits for something no futex of this wait
	// signals.
	Sleep  time.Duration
	start  time.Time
	budget time.Duration
	sleeps int
}

// Reset records whether the wait's spin was met (for its Spin) and starts
// the next wait afresh.
func (w *Waiter) Reset() {
	if !w.start.IsZero() {
		d := time.Since(w.start)
		met := d <= w.budget
		if w.budget > 0 {
			w.Spin.record(met)
		}
		if w.Spin != nil && w.Spin.log != nil {
			w.Spin.log.add(w.start, d, w.budget, w.sleeps, w.Spin.missed.Load())
		}
	}
	w.start, w.sleeps = time.Time{}, 0
}

// wait waits one step for ready: it returns when ready is true or after a
// bounded step (at most SleepMax), whichever is first.
func (w *Waiter) wait(seq, waiters, waiters2 *uint32, ready func() bool) {
	if w.start.IsZero() {
		w.start, w.budget = time.Now(), w.Spin.budget()
	}
	if time.Since(w.start) < w.budget {
		for i := 0; i < 256; i++ {
			if ready() {
				return
			}
		}
		runtime.Gosched() // a peer may be a goroutine of this process
		return
	}
	for _, c := range [2]*uint32{waiters, waiters2} {
		if c != nil {
			atomic.AddUint32(c, 1)
		}
	}
	s := atomic.LoadUint32(seq)
	if !ready() {
		d := SleepMax
		if w.Sleep > 0 {
			d = min(w.Sleep, SleepMax)
		}
		futexWait(seq, s, d)
		w.sleeps++
	}
	for _, c := range [2]*uint32{waiters, waiters2} {
		if c != nil {
			atomic.AddUint32(c, ^uint32(0))
		}
	}
}
