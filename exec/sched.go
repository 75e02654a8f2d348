package exec

import "fmt"

// Real-time scheduling is refused (docs/reliability.md): a rank's threads
// at equal real-time priority can starve each other, and a rank, its
// partners and the launcher spinning or runnable behind one another at
// that priority end neither on a lost peer nor on a signal.

// Linux's scheduling policies that are real-time (sched(7)).
const (
	schedFIFO     = 1
	schedRR       = 2
	schedDeadline = 6
)

// schedulingError is the refusal of a rank running under policy at
// priority, or nil where the policy is an ordinary one (SCHED_OTHER,
// SCHED_BATCH, SCHED_IDLE: nice values are fine).
func schedulingError(policy int, priority uint32) error {
	var name string
	switch policy {
	case schedFIFO:
		name = "SCHED_FIFO"
	case schedRR:
		name = "SCHED_RR"
	case schedDeadline:
		name = "SCHED_DEADLINE"
	default:
		return nil
	}
	return fmt.Errorf("run: this rank runs under real-time scheduling (%s, priority %d), which is not supported: a rank's threads at equal real-time priority can starve each other and the job then cannot be stopped (docs/reliability.md); run the ranks at ordinary priority (chrt -o 0, or nice)", name, priority)
}
