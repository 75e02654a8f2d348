package main

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

	"github.com/spf13/cobra"
)

// interruptGrace is how long a command gets, after the first SIGINT or
// SIGTERM cancelled its context, to return on its own (a rank tells the
// others it is leaving) before the process exits anyway. Every file a
// command writes is written to a temporary name and renamed into place at
// the end, so an exit at any moment leaves no partial file under a real name.
const interruptGrace = 750 * time.Millisecond

// interruptBound is the bound stated to users: every subcommand ends within
// it of SIGINT/SIGTERM (the grace, plus the exit itself).
const interruptBound = time.Second

// selfBoundKey marks a context whose command bounds its own exit after a
// signal (the built-in launcher waits for its ranks, and kills them when
// they outlive the bound, so that none is left behind).
type selfBoundKey struct{}

// boundsOwnExit tells execute that the running command ends itself within
// interruptBound of a signal; execute then waits for it instead of exiting
// after interruptGrace. It is a no-op on a context execute did not make.
func boundsOwnExit(ctx context.Context) {
	if f, ok := ctx.Value(selfBoundKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// drainsKey marks a context whose command shuts down in order on a signal
// (serve drains its requests within --drain-timeout): execute waits for it,
// and a clean shutdown exits 0, as servers do.
type drainsKey struct{}

// drainsOnSignal tells execute that the running command treats SIGINT and
// SIGTERM as an orderly shutdown with its own stated bound; its own error
// (nil: exit 0) decides the exit code.
func drainsOnSignal(ctx context.Context) {
	boundsOwnExit(ctx)
	if f, ok := ctx.Value(drainsKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// execute runs root with a context that ends on the first SIGINT or
// SIGTERM, and returns the process's exit code: the command's (exitError,
// else 1 for an error, 0), or 128+signal once a signal arrived (130 for
// SIGINT, 143 for SIGTERM) — the command then gets interruptGrace to return,
// after which the process ends regardless of what the command is blocked
// in (a read from a named pipe, a long estimate). Messages go to stderr.
func execute(root *cobra.Command, args []string, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	selfBound, drains := new(atomic.Bool), new(atomic.Bool)
	ctx := context.WithValue(context.WithValue(context.Background(), selfBoundKey{}, selfBound), drainsKey{}, drains)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	root.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var sig os.Signal
	select {
	case err := <-done:
		return exitCode(err, stderr)
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
		case <-time.After(interruptGrace):
			err = fmt.Errorf("stopped %v after %v", sig, interruptGrace)
		}
	}
	if drains.Load() {
		return exitCode(err, stderr)
	}
	var ee *exitError
	switch {
	case errors.As(err, &ee) && ee.code > 128:
		code = ee.code // a launcher reports the worst rank, itself killed by a signal
	}
	msg := fmt.Sprintf("interrupted by %v", sig)
	if err != nil && !errors.Is(err, context.Canceled) {
		msg += ": " + err.Error()
	}
	fmt.Fprintln(stderr, "partbench:", msg)
	return code
}

// exitCode prints err and returns the exit code it carries.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "partbench:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}
