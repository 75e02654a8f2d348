package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestReadWatch: a receive returns its own result when it completes within
// the timeout, even one that spans several of the watch's scans; one that
// does not complete gets DeadlineExceeded, never before the timeout; the
// watch's timer stops once nothing is in flight.
func TestReadWatch(t *testing.T) {
	const timeout = 400 * time.Millisecond // period 400/16 = 25 ms
	w := newReadWatch(timeout)
	if w.period != 25*time.Millisecond {
		t.Fatalf("period %v, want 400 ms / 16 = 25 ms", w.period)
	}
	own := errors.New("own result")
	if err := w.within(nil, func() error { return own }); err != own {
		t.Errorf("a prompt receive: %v, want its own result", err)
	}
	// 100 ms: four scans pass while it runs, none may fail it.
	if err := w.within(nil, func() error { time.Sleep(100 * time.Millisecond); return own }); err != own {
		t.Errorf("a receive of 100 ms under a %v timeout: %v, want its own result", timeout, err)
	}
	release := make(chan struct{})
	t0 := time.Now()
	err := w.within(nil, func() error { <-release; return own })
	took := time.Since(t0)
	close(release) // the abandoned receive completes without a reader
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a receive that never completes: %v, want DeadlineExceeded", err)
	}
	if took < timeout {
		t.Errorf("a silent receive was given up after %v, before the %v timeout", took, timeout)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		n, armed := len(w.live), w.armed
		w.mu.Unlock()
		if n == 0 && !armed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the last receive: %d in flight, timer armed %v; want none", n, armed)
		}
		time.Sleep(w.period)
	}
}

// TestReadWatchCancels: with the stream's cancel, a receive runs on the
// caller's goroutine; one that completes returns its own result, one that
// waits past the timeout has its stream cancelled by the watch (the
// receive below waits on the stream's context, as gRPC's does) and gets
// DeadlineExceeded, never before the timeout.
func TestReadWatchCancels(t *testing.T) {
	const timeout = 400 * time.Millisecond
	w := newReadWatch(timeout)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	own := errors.New("own result")
	if err := w.within(func(why error) { cancel(why) }, func() error { return own }); err != own {
		t.Errorf("a prompt receive: %v, want its own result", err)
	}
	if ctx.Err() != nil {
		t.Fatal("a prompt receive's stream was cancelled")
	}
	t0 := time.Now()
	err := w.within(func(why error) { cancel(why) }, func() error { <-ctx.Done(); return ctx.Err() })
	took := time.Since(t0)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a receive that never completes: %v, want DeadlineExceeded", err)
	}
	if took < timeout {
		t.Errorf("a silent receive was given up after %v, before the %v timeout", took, timeout)
	}
	if status.Code(context.Cause(ctx)) != codes.DeadlineExceeded {
		t.Errorf("the stream's cancel cause: %v, want the read timeout", context.Cause(ctx))
	}
}
