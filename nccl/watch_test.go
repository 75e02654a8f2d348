//go:build cgo

package nccl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// watchInterval is the poll period in these tests. The fake reports its
// asynchronous error on the third poll, so the abort is due after about
// 3 intervals; the limit below leaves room for a loaded CI machine.
const (
	watchInterval = 10 * time.Millisecond
	watchLimit    = 2 * time.Second
)

// blockedCall runs a collective that the fake blocks until an abort and
// returns when it came back and with what.
func blockedCall(c *Comm) <-chan error {
	out := make(chan error, 1)
	go func() { out <- c.AllReduce(0, 0, 0, Float32, Sum, 0) }()
	return out
}

func TestWatchdogAbortsOnAsyncError(t *testing.T) {
	l := loadFake(t)
	c, err := l.CommInitRank(2, modeID(modeAsync|modeHang), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	start := time.Now()
	call := blockedCall(c)
	watch := c.Watch(context.Background(), watchInterval)

	var werr, cerr error
	select {
	case werr = <-watch:
	case <-time.After(watchLimit):
		t.Fatal("watchdog did not fire")
	}
	select {
	case cerr = <-call:
	case <-time.After(watchLimit):
		t.Fatal("the blocked call did not return after the abort")
	}
	if d := time.Since(start); d > watchLimit {
		t.Errorf("rank got out after %v", d)
	}
	if !errors.Is(werr, RemoteError) || !strings.Contains(werr.Error(), "fake: rank 2 stopped answering") {
		t.Errorf("watchdog error = %v, want ncclRemoteError with the last-error text", werr)
	}
	if !errors.Is(cerr, ErrAborted) {
		t.Errorf("blocked call error = %v, want it to wrap ErrAborted", cerr)
	}
	if err := c.AsyncError(); !errors.Is(err, ErrAborted) {
		t.Errorf("AsyncError after abort = %v", err)
	}
	if _, ok := <-watch; ok {
		t.Error("watch channel not closed after its one value")
	}
}

func TestWatchdogAbortsOnCancel(t *testing.T) {
	l := loadFake(t)
	c, err := l.CommInitRank(2, modeID(modeHang), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	ctx, cancel := context.WithCancelCause(context.Background())
	call := blockedCall(c)
	watch := c.Watch(ctx, time.Hour) // cancellation alone must do it
	peerDied := errors.New("rank 3 exited")
	cancel(peerDied)
	select {
	case err := <-watch:
		if !errors.Is(err, peerDied) {
			t.Errorf("watchdog error = %v, want the cancel cause", err)
		}
	case <-time.After(watchLimit):
		t.Fatal("watchdog did not abort on cancel")
	}
	select {
	case err := <-call:
		if !errors.Is(err, ErrAborted) {
			t.Errorf("blocked call error = %v", err)
		}
	case <-time.After(watchLimit):
		t.Fatal("the blocked call did not return")
	}
}

func TestWatchdogQuietOnHealthyComm(t *testing.T) {
	l := loadFake(t)
	c, err := l.CommInitRank(2, modeID(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	watch := c.Watch(context.Background(), time.Millisecond)
	time.Sleep(20 * time.Millisecond) // ~20 healthy polls
	if err := c.Destroy(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-watch:
		if err != nil {
			t.Errorf("watchdog on a healthy, destroyed comm = %v, want nil", err)
		}
	case <-time.After(watchLimit):
		t.Fatal("watchdog did not stop on Destroy")
	}
}
