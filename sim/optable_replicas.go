package sim

import (
	"math"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// The later of the replicas. A data-parallel job's TTFT is the later of its
// replicas' each iteration (the last sequence's first token), and the
// timeline simulates one replica (they run the same Programs). Where the
// replicas' ranks share a host's cores, each meets the host's other work
// on its own; the profile's replica_spread entry (configs.ReplicaSpreadKind,
// calib/replicaspread.go) holds, per block length and number of replicas R,
// the median of the later of R independent blocks of the ranks' cycle over
// one block's median, measured at the job's rank count. TTFT is multiplied
// by it at the plan's replicas and its one-replica TTFT (docs/costmodel.md,
// "Shared cores: the later of the replicas"). TPOT and TPS are left alone:
// a step's end is the later replica's too, but TPOT is the difference of
// two such ends, in which the replicas' offsets largely cancel.

// replicaSpread is the factor the later of plan's DP replicas' TTFT is
// above one replica's ttftS: the table's replica_spread entry at the
// plan's replicas (interpolated between measured counts, none beyond them)
// and block length ttftS (clamped to the measured lengths); 1 with one
// replica, without a host's cores, without an entry, or below 1 (the later
// of several is never earlier than one).
func replicaSpread(table *OpTable, plan *partition.Plan, ttftS float64) float64 {
	dp := plan.Config.Parallel.DP
	cores := hostCores(plan)
	if dp <= 1 || cores <= 0 || !(ttftS > 0) {
		return 1
	}
	f, ok := table.lookupClampedAt(configs.ReplicaSpreadKind, configs.CoreWaitShape(cores), int64(math.Round(ttftS*1e9)), int64(dp))
	if !ok || f < 1 {
		return 1
	}
	return f
}
