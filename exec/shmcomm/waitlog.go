package shmcomm

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// WaitRecord is one wait of a Spin that keeps a log (Spin.KeepLog): when
// it began (Unix time, comparable between the ranks of a host), how long it lasted until the
// awaited thing happened (Waiter.Reset), the spin it was given, how many
// futex sleeps it took, whether its spin was met (it spun and ended within
// the spin), and the Spin's share of missed spins (0–1024) after it.
type WaitRecord struct {
	Start        time.Time
	Wait, Budget time.Duration
	Sleeps       int
	Met          bool
	Missed       int64
}

// waitLog is a Spin's log: at most max records, the first ones.
type waitLog struct {
	mu    sync.Mutex
	max   int
	recs  []WaitRecord
	drops int
}

// KeepLog makes s keep a record of each of its first max waits, for a
// study of the wait policy (PARTBENCH_SHM_WAITLOG in exec/tcpcomm). Call
// it before the waits begin.
func (s *Spin) KeepLog(max int) {
	s.log = &waitLog{max: max}
}

// Log is a copy of the waits s kept (KeepLog), and how many it did not.
func (s *Spin) Log() (recs []WaitRecord, dropped int) {
	if s == nil || s.log == nil {
		return nil, 0
	}
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return append([]WaitRecord(nil), s.log.recs...), s.log.drops
}

func (l *waitLog) add(start time.Time, wait, budget time.Duration, sleeps int, missed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recs) >= l.max {
		l.drops++
		return
	}
	l.recs = append(l.recs, WaitRecord{Start: start, Wait: wait, Budget: budget, Sleeps: sleeps, Met: budget > 0 && wait <= budget, Missed: missed})
}

// WriteLog writes recs as tab-separated lines with a header: start (Unix
// time), wait
// and budget in ns, sleeps, met (0/1), and the share of missed spins
// after the wait.
func WriteLog(w io.Writer, recs []WaitRecord) error {
	if _, err := fmt.Fprintln(w, "start_unix_ns\twait_ns\tbudget_ns\tsleeps\tmet\tmissed"); err != nil {
		return err
	}
	for _, r := range recs {
		if _, err := fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\n", r.Start.UnixNano(), r.Wait.Nanoseconds(), r.Budget.Nanoseconds(), r.Sleeps, bit(r.Met), r.Missed); err != nil {
			return err
		}
	}
	return nil
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}
