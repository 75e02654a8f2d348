package retry

import (
	"context"
	"errors"
	"time"
)

// Backoff is the wait after a failed attempt: First, doubling up to Max.
type Backoff struct {
	First, Max time.Duration
}

// ErrNoTime is returned when the deadline passed before the first attempt.
var ErrNoTime = errors.New("no time left to try")

// permanent marks an error that ends the retries.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that Do returns it at once (unwrapped).
func Permanent(err error) error { return permanent{err} }

// Do calls try until it returns nil, a Permanent error (returned
// unwrapped), ctx ends, or deadline (zero: none) passes; between attempts
// it waits b's backoff, never past the deadline. It returns nil on success,
// else the last attempt's error: the caller decides whether a cancelled
// ctx (ctx.Err()) says more than that.
func (b Backoff) Do(ctx context.Context, deadline time.Time, try func() error) error {
	wait := b.First
	var last error
	for {
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			if last == nil {
				return ErrNoTime
			}
			return last
		}
		err := try()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.err
		}
		last = err
		if ctx.Err() != nil {
			return last
		}
		d := wait
		if !deadline.IsZero() {
			d = min(d, time.Until(deadline))
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return last
		case <-t.C:
		}
		wait = min(2*wait, b.Max)
	}
}
