package sim

import (
	"math"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// Collectives in place. A collective between a run's real ops takes
// longer than the same call back to back, where the op-time table's entry
// was measured: the partner wakes up after its compute, and the partners
// arrive apart by the jitter of what each computed (docs/costmodel.md,
// "Collectives in place"). Where the profile has the in-place wait at the
// config's ranks per host (configs.InPlaceWaitKind: calibrate runs the op
// configs of that many ranks through the executor, at counts no larger
// than the host's cores; Apply keeps it at that count only), a collective
// is charged, beyond its table or modeled time, the wait after burstS of
// compute since its members' last collective or receive (interpolated
// between measured bursts, the nearest measured one outside them). It
// holds the partner's wake-up the core wait would charge at that count, so
// the core wait is not charged beside it.

// inPlaceWaitS is the in-place wait of op after burstS seconds of compute,
// and whether the table has one for its kind and group.
func inPlaceWaitS(table *OpTable, op *partition.Op, burstS float64) (float64, bool) {
	if table == nil || (op.Kind != partition.AllReduce && op.Kind != partition.AllGather) {
		return 0, false
	}
	kind, shape, _, _ := OpKey(op)
	return table.lookupClamped(configs.InPlaceWaitKind, configs.InPlaceWaitShape(kind, shape), int64(math.Round(burstS*1e9)))
}
