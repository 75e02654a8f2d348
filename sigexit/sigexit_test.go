package sigexit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

type codeErr struct{ code int }

func (e codeErr) Error() string { return fmt.Sprintf("failed with %d", e.code) }
func (e codeErr) ExitCode() int { return e.code }

func TestRunExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		msg  string
	}{
		{nil, 0, ""},
		{errors.New("boom"), 1, "pb: boom\n"},
		{fmt.Errorf("wrapped: %w", codeErr{4}), 4, "pb: wrapped: failed with 4\n"},
	} {
		var stderr bytes.Buffer
		got := Run("pb", func(context.Context) error { return c.err }, &stderr)
		if got != c.code || stderr.String() != c.msg {
			t.Errorf("%v: code %d, stderr %q; want %d, %q", c.err, got, stderr.String(), c.code, c.msg)
		}
	}
}

// signalSelf sends sig to this process once the command has started.
func signalSelf(t *testing.T, sig syscall.Signal, started <-chan struct{}) {
	go func() {
		<-started
		if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
			t.Error(err)
		}
	}()
}

func TestRunSignalCancelsAndExits128PlusSignal(t *testing.T) {
	// SIGINT is 2 and SIGTERM 15: 128+2 = 130, 128+15 = 143.
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		started := make(chan struct{})
		signalSelf(t, sig, started)
		var stderr bytes.Buffer
		got := Run("pb", func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}, &stderr)
		if wantMsg := fmt.Sprintf("pb: interrupted by %v\n", sig); got != want || stderr.String() != wantMsg {
			t.Errorf("%v: code %d, stderr %q; want %d, %q", sig, got, stderr.String(), want, wantMsg)
		}
	}
}

func TestRunStopsACommandThatIgnoresTheSignalAfterGrace(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	signalSelf(t, syscall.SIGINT, started)
	var stderr bytes.Buffer
	t0 := time.Now()
	got := Run("pb", func(context.Context) error { close(started); <-release; return nil }, &stderr)
	if el := time.Since(t0); got != 130 || el < Grace || el > Bound+5*time.Second {
		t.Errorf("code %d after %v; want 130 after the %v grace", got, el, Grace)
	}
	if want := "pb: interrupted by interrupt: stopped interrupt after 750ms\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

func TestDrainsOnSignalExitsWithTheCommandsOwnCode(t *testing.T) {
	for _, c := range []struct {
		ret  error
		code int
	}{{nil, 0}, {codeErr{129 + 2}, 131}} {
		started := make(chan struct{})
		signalSelf(t, syscall.SIGTERM, started)
		var stderr bytes.Buffer
		got := Run("pb", func(ctx context.Context) error {
			DrainsOnSignal(ctx)
			close(started)
			<-ctx.Done()
			return c.ret
		}, &stderr)
		if got != c.code {
			t.Errorf("drained with %v: code %d, want %d (stderr %q)", c.ret, got, c.code, stderr.String())
		}
	}
}

func TestBoundsOwnExitKeepsTheWorstRanksSignalCode(t *testing.T) {
	// A launcher whose rank died of SIGKILL (128+9 = 137) reports 137, not
	// the 130 of the SIGINT it received.
	started := make(chan struct{})
	signalSelf(t, syscall.SIGINT, started)
	var stderr bytes.Buffer
	got := Run("pb", func(ctx context.Context) error {
		BoundsOwnExit(ctx)
		close(started)
		<-ctx.Done()
		time.Sleep(Grace + 100*time.Millisecond) // longer than Grace: Run must wait
		return codeErr{137}
	}, &stderr)
	if want := "pb: interrupted by interrupt: failed with 137\n"; got != 137 || stderr.String() != want {
		t.Errorf("code %d, stderr %q; want 137, %q", got, stderr.String(), want)
	}
}
