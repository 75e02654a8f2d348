package nccl

import (
	"context"
	"fmt"
	"time"
)

// AsyncError reports an error the library found in the background
// (ncclCommGetAsyncError): nil while the communicator is healthy or, when
// non-blocking, still working.
func (c *Comm) AsyncError() error {
	_, err := c.asyncState()
	return err
}

// asyncState polls the library; the returned Result is Success,
// InProgress, or the error's Result.
func (c *Comm) asyncState() (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock() // Abort and Destroy wait for the poll, so h stays valid
	if err := c.usable("ncclCommGetAsyncError"); err != nil {
		return Success, err
	}
	async, r := c.lib.c.commGetAsyncError(c.h)
	if r != Success {
		return r, c.fail("ncclCommGetAsyncError", r)
	}
	if async != Success && async != InProgress {
		return async, callError("asynchronous error", async, c.lib.c.getLastError(c.h))
	}
	return async, nil
}

// waitPoll is how often Wait asks a non-blocking communicator.
const waitPoll = 200 * time.Microsecond

// Wait returns when the communicator's last call has left ncclInProgress
// (non-blocking communicators; a blocking one returns at once), with the
// asynchronous error if the call failed, or ctx's error when ctx is done
// first.
func (c *Comm) Wait(ctx context.Context) error {
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	for {
		state, err := c.asyncState()
		if err != nil || state != InProgress {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nccl: waiting for the communicator: %w", context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Watch starts a watchdog that polls the communicator's asynchronous error
// every interval. When the library reports an error, or ctx is done (a
// caller that learnt that a peer died cancels it), the watchdog aborts the
// communicator, so a rank blocked on it gets out within interval plus the
// time ncclCommAbort takes (ctx: the abort time alone). The channel then
// receives that error and closes. When the Comm is destroyed or aborted by
// someone else first, it receives nil. Stop a watchdog without an abort by
// destroying the Comm, never by cancelling ctx. An interval ≤ 0 means 1 s.
func (c *Comm) Watch(ctx context.Context, interval time.Duration) <-chan error {
	out := make(chan error, 1)
	go func() {
		defer close(out)
		out <- c.watch(ctx, interval)
	}()
	return out
}

func (c *Comm) watch(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return nil
		case <-ctx.Done():
			return c.watchdogAbort(fmt.Errorf("nccl: watchdog aborted the communicator: %w", context.Cause(ctx)))
		case <-t.C:
			if _, err := c.asyncState(); err != nil {
				if c.state.Load() != stateOpen {
					return nil // closed while we polled
				}
				return c.watchdogAbort(fmt.Errorf("nccl: watchdog aborted the communicator: %w", err))
			}
		}
	}
}

func (c *Comm) watchdogAbort(cause error) error {
	did, err := c.abort()
	if !did {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w; then %w", cause, err)
	}
	return cause
}
