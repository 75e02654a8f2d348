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
	// stop ends the stream the receive waits on, with the status the
	// client should see (grpcServerStream.stop); the watch calls it at the
	// timeout and sets late. Without one, the receive runs in a goroutine
	// of its own and done takes its result or the watch's timeout (2
	// places).
	stop func(error)
	late bool
	done chan error
}

func newReadWatch(timeout time.Duration) *readWatch {
	return &readWatch{timeout: timeout, period: max(wire.TimeoutSlack(timeout), time.Millisecond), live: map[*watchedRecv]struct{}{}}
}

func (w *readWatch) timeoutErr() error {
	return status.Errorf(codes.DeadlineExceeded, "no message within %v (the server's read timeout)", w.timeout)
}

// within runs recv and returns its error, or a DeadlineExceeded status once
// it has run for longer than the timeout. With stop (ending the stream),
// recv runs on the caller's goroutine and the watch ends it by ending the
// stream, which a request past its read timeout ends anyway: no goroutine
// and no hand-off per receive (a decode step made two, each a chance to
// wait for a thread on a busy machine). Without, recv runs in its own
// goroutine, which may then still complete into its destination (the
// caller drops that buffer).
func (w *readWatch) within(stop func(error), recv func() error) error {
	r := &watchedRecv{start: time.Now(), stop: stop}
	if stop == nil {
		r.done = make(chan error, 2)
	}
	w.mu.Lock()
	w.live[r] = struct{}{}
	if !w.armed {
		w.armed = true
		time.AfterFunc(w.period, w.scan)
	}
	w.mu.Unlock()
	var err error
	if stop != nil {
		err = recv()
	} else {
		go func() { r.done <- recv() }()
		err = <-r.done
	}
	w.mu.Lock()
	delete(w.live, r)
	late := r.late
	w.mu.Unlock()
	if late {
		return w.timeoutErr()
	}
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
			if r.stop != nil {
				r.late = true
				r.stop(w.timeoutErr())
			} else {
				r.done <- w.timeoutErr()
			}
		}
	}
	if w.armed = len(w.live) > 0; w.armed {
		time.AfterFunc(w.period, w.scan)
	}
}
