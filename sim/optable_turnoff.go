package sim

import (
	"math"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// A turn's time off its core. The op table prices each compute op by its
// time on a core, taken in turns where a rank computes alone
// (optable_turns.go); a run's pipeline stage is timed on the wall clock,
// and in its turn it also spends time off its core — preempted by the
// rank it woke, by an earlier stage's sender resuming its Send call, by
// the host's other work — which no op time holds. A CPU calibration
// measures it per turn among the op table's ranks taking turns
// (configs.TurnOffKind: the turn's wall time less its thread's CPU time,
// by the turn's time on the core), and the timeline adds it where a
// rank's turn ends in a send: after compute of turnS seconds since its
// last communication op, at the burst's mean fair-share stretch s,
//
//	T_off(turnS) · (1 − share(s))
//
// share = coreWaitShare — 0 where the rank computed alone (a
// one-micro-batch pipeline's stage), 1 where every rank computed, whose
// time off the core the shared-core stretch already prices. It is the
// send slice's wait (Slice.WaitS, 0 on a send otherwise): the send's
// launch, and the message, come that much later, and the rank is not busy
// in it (busySpan). The op check compares the send row with the runs'
// Send calls, which do not hold it, and takes it out again
// (compare/opcheck.go; docs/costmodel.md, "A turn's time off its core").

// turnOffS is the time off its core of a rank's turn of turnS seconds of
// compute run at a mean fair-share stretch of stretch (rankState.stretch)
// at the plan's host cores: the table's turn_off entry at turnS
// (interpolated between measured turns, the nearest outside them) times
// 1 − coreWaitShare, 0 without an entry or compute.
func turnOffS(table *OpTable, plan *partition.Plan, turnS, stretch float64) float64 {
	cores := hostCores(plan)
	if cores <= 0 || table == nil || !(turnS > 0) {
		return 0
	}
	t, ok := table.lookupClamped(configs.TurnOffKind, configs.CoreWaitShape(cores), int64(math.Round(turnS*1e9)))
	if !ok {
		return 0
	}
	return t * (1 - coreWaitShare(stretch, planRanks(plan), cores))
}
