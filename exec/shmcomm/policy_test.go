package shmcomm

import (
	"testing"
	"time"
)

// TestBudgetAndRecord: the exported half of the policy, for waiters other
// than Waiter. An adaptive Spin whose every spin is missed spins the
// first 6 (missed share 0 → 1024·(1−(7/8)^k) passes 512 at k = 6), then,
// with SetProbeEvery(4), every 4th of the 64 waits left (the probe counter
// starts at the first wait past the threshold): 6 + 16 = 22 of 70.
func TestBudgetAndRecord(t *testing.T) {
	var s Spin
	s.Configure(SpinAdaptive, time.Millisecond)
	s.SetProbeEvery(4)
	spun := 0
	for i := 0; i < 70; i++ {
		if b := s.Budget(); b > 0 {
			if b != time.Millisecond {
				t.Fatalf("wait %d: budget %v, want the configured 1ms", i, b)
			}
			spun++
			s.Record(false)
		}
	}
	if spun != 22 {
		t.Errorf("adaptive, every spin missed, probing one in 4: %d of 70 spun, want 22", spun)
	}
	// Met spins bring it back: after a few, every wait spins again.
	for i := 0; i < 20; i++ {
		s.Record(true)
	}
	for i := 0; i < 10; i++ {
		if s.Budget() == 0 {
			t.Fatalf("after 20 met spins, wait %d did not spin", i)
		}
	}
	var off Spin
	off.Configure(SpinOff, time.Millisecond)
	if b := off.Budget(); b != 0 {
		t.Errorf("off: budget %v, want 0", b)
	}
}
