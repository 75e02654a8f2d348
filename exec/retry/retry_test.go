package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDo(t *testing.T) {
	b := Backoff{First: time.Millisecond, Max: 4 * time.Millisecond}
	// Succeeds on the third attempt.
	n := 0
	if err := b.Do(context.Background(), time.Time{}, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Errorf("err %v after %d attempts, want nil after 3", err, n)
	}
	// A permanent error ends it at once, unwrapped.
	bad := errors.New("wrong peer")
	n = 0
	if err := b.Do(context.Background(), time.Time{}, func() error { n++; return Permanent(bad) }); err != bad || n != 1 {
		t.Errorf("permanent: %v after %d attempts", err, n)
	}
	// The deadline ends it with the last error.
	last := errors.New("refused")
	if err := b.Do(context.Background(), time.Now().Add(20*time.Millisecond), func() error { return last }); err != last {
		t.Errorf("deadline: %v", err)
	}
	if err := b.Do(context.Background(), time.Now().Add(-time.Second), func() error { return nil }); err != ErrNoTime {
		t.Errorf("past deadline: %v", err)
	}
	// A cancelled context ends it with the last error.
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	if err := b.Do(ctx, time.Time{}, func() error {
		if n++; n == 2 {
			cancel()
		}
		return last
	}); err != last || n != 2 {
		t.Errorf("cancelled: %v after %d attempts", err, n)
	}
}
