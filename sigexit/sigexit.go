package sigexit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// Grace is how long a command gets, after the first SIGINT or SIGTERM
// cancelled its context, to return on its own (a rank tells the others it is
// leaving) before the process exits anyway. Every file a command writes is
// written to a temporary name and renamed into place at the end, so an exit
// at any moment leaves no partial file under a real name.
const Grace = 750 * time.Millisecond

// Bound is the bound stated to users: every command ends within it of
// SIGINT/SIGTERM (the grace, plus the exit itself).
const Bound = time.Second

// ExitCoder is an error that carries a specific exit code.
type ExitCoder interface {
	error
	ExitCode() int
}

// selfBoundKey marks a context whose command bounds its own exit after a
// signal (the built-in launcher waits for its ranks, and kills them when
// they outlive the bound, so that none is left behind).
type selfBoundKey struct{}

// BoundsOwnExit tells Run that the running command ends itself within Bound
// of a signal; Run then waits for it instead of exiting after Grace. It is a
// no-op on a context Run did not make.
func BoundsOwnExit(ctx context.Context) {
	if f, ok := ctx.Value(selfBoundKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// drainsKey marks a context whose command shuts down in order on a signal
// (serve drains its requests within --drain-timeout): Run waits for it, and
// a clean shutdown exits 0, as servers do.
type drainsKey struct{}

// DrainsOnSignal tells Run that the running command treats SIGINT and
// SIGTERM as an orderly shutdown with its own stated bound; its own error
// (nil: exit 0) decides the exit code.
func DrainsOnSignal(ctx context.Context) {
	BoundsOwnExit(ctx)
	if f, ok := ctx.Value(drainsKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// Run runs command with a context that ends on the first SIGINT or SIGTERM,
// and returns the process's exit code: the command's (an ExitCoder's code,
// else 1 for an error, 0), or 128+signal once a signal arrived (130 for
// SIGINT, 143 for SIGTERM) — the command then gets Grace to return, after
// which Run returns regardless of what the command is blocked in (a read
// from a named pipe, a long estimate). Messages go to stderr, prefixed with
// name.
func Run(name string, command func(context.Context) error, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	selfBound, drains := new(atomic.Bool), new(atomic.Bool)
	ctx := context.WithValue(context.WithValue(context.Background(), selfBoundKey{}, selfBound), drainsKey{}, drains)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- command(ctx) }()

	var sig os.Signal
	select {
	case err := <-done:
		return Code(name, err, stderr)
	case sig = <-sigs:
	}
	cancel()
	code := 128 + int(sig.(syscall.Signal))
	var err error
	if selfBound.Load() {
		// The launcher returns once its ranks are gone (it forwarded the
		// signal and kills them at its own bound); a second signal is its to
		// handle too.
		err = <-done
	} else {
		select {
		case err = <-done:
		case <-time.After(Grace):
			err = fmt.Errorf("stopped %v after %v", sig, Grace)
		}
	}
	if drains.Load() {
		return Code(name, err, stderr)
	}
	var ec ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() > 128 {
		code = ec.ExitCode() // a launcher reports the worst rank, itself killed by a signal
	}
	msg := fmt.Sprintf("interrupted by %v", sig)
	if err != nil && !errors.Is(err, context.Canceled) {
		msg += ": " + err.Error()
	}
	fmt.Fprintln(stderr, name+":", msg)
	return code
}

// Code prints err, prefixed with name, to stderr and returns the exit code
// it carries: 0 for nil, an ExitCoder's code, else 1.
func Code(name string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, name+":", err)
	var ec ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}
