package server

import (
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/partbench/partbench/remote/wire"
)

// readWatch bounds the gRPC server's receives by the read timeout without a
// timer per receive: a decode step made two receives, and each armed and
// stopped its own timer (a new earliest timer wakes a thread). One timer
// instead runs while receives are in flight, every timeout/16 (at most a
// second), and fails those older than the timeout: a receive gives up
// between ReadTimeout and ReadTimeout + its period.
type readWatch struct {
	timeout, period time.Duration
	mu              sync.Mutex
	live            map[*watchedRecv]struct{}
	armed           bool // the timer is pending
}

type watchedRecv struct {
	start time.Time
	done  chan error // 2 places: the receive's result and the watch's timeout
}

func newReadWatch(timeout time.Duration) *readWatch {
	return &readWatch{timeout: timeout, period: max(wire.TimeoutSlack(timeout), time.Millisecond), live: map[*watchedRecv]struct{}{}}
}

// within runs recv in its own goroutine and returns its error, or a
// DeadlineExceeded status once it has run for longer than the timeout (it
// may then still complete into its destination; the caller drops that
// buffer).
func (w *readWatch) within(recv func() error) error {
	r := &watchedRecv{start: time.Now(), done: make(chan error, 2)}
	w.mu.Lock()
	w.live[r] = struct{}{}
	if !w.armed {
		w.armed = true
		time.AfterFunc(w.period, w.scan)
	}
	w.mu.Unlock()
	go func() { r.done <- recv() }()
	err := <-r.done
	w.mu.Lock()
	delete(w.live, r)
	w.mu.Unlock()
	return err
}

// scan fails the receives older than the timeout and runs again while any
// is in flight.
func (w *readWatch) scan() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for r := range w.live {
		if now.Sub(r.start) >= w.timeout {
			delete(w.live, r)
			r.done <- status.Errorf(codes.DeadlineExceeded, "no message within %v (the server's read timeout)", w.timeout)
		}
	}
	if w.armed = len(w.live) > 0; w.armed {
		time.AfterFunc(w.period, w.scan)
	}
}
