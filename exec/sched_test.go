package exec

import (
	"strings"
	"testing"
)

// The real-time policies are refused by name and priority with what to
// do instead; the ordinary ones (SCHED_OTHER 0, SCHED_BATCH 3,
// SCHED_IDLE 5, sched(7)) run. The test process itself runs at ordinary
// priority, so its own check passes.
func TestSchedulingRefusesRealTime(t *testing.T) {
	for _, c := range []struct {
		policy int
		name   string
	}{{1, "SCHED_FIFO"}, {2, "SCHED_RR"}, {6, "SCHED_DEADLINE"}} {
		err := schedulingError(c.policy, 10)
		if err == nil || !strings.Contains(err.Error(), c.name+", priority 10") || !strings.Contains(err.Error(), "ordinary priority") {
			t.Errorf("policy %d: %v, want a refusal naming %s and priority 10 and what to do", c.policy, err, c.name)
		}
	}
	for _, p := range []int{0, 3, 5} {
		if err := schedulingError(p, 0); err != nil {
			t.Errorf("policy %d refused: %v", p, err)
		}
	}
	if err := checkScheduling(); err != nil {
		t.Errorf("the test process: %v", err)
	}
}
