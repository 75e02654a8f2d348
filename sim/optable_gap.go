package sim

import "github.com/partbench/partbench/partition"

// The op gap. A run's executor spends some time between two ops outside
// their timers — its loop, the timers' clock reads, their bookkeeping —
// which the op table, timed as the runs' op timers time, does not hold. A
// CPU calibration measures it per op (configs.OpGapKind: one rank's decode
// Program through the executor) and sim adds it to each compute op it
// prices from the table, on the op's rank (docs/costmodel.md, "The op
// gap"). The op check takes it out of the modeled op times again
// (OpGapS), as it compares them with the op timers.

// opGapS is the table's op gap (its entry, read once by NewOpTable), 0
// without one.
func (t *OpTable) opGapS() float64 {
	if t == nil {
		return 0
	}
	return t.gapS
}

// OpGapS is the op gap sim adds to each compute op of plan that its
// hardware's op-time table prices (a slice of Bound BoundTable), before
// any shared-core stretch; 0 where the profile has none.
func OpGapS(plan *partition.Plan) float64 {
	return planOpTable(plan).opGapS()
}
