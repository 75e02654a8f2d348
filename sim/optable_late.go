package sim

import (
	"math"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// The partner behind. sim's TP partners are identical and arrive at a
// collective together; on a host of more ranks than cores they do not. A
// pair leaves each collective one wake-up apart (the partner woken for the
// last message step leaves last), and the later leaver is the next
// collective's later arriver, so the partner ahead waits for it at each
// collective: docs/measurements/cpu-calibration.md, (eleventh) and
// (sixteenth, b), where tp2pp2-tiny's last stage lost 104–148 µs per
// stage and micro-batch (9 collectives) to that wait, most of its TTFT's
// miss in the segment where both stages compute at once.
//
// The core wait W (configs.CoreWaitKind) is that wake-up per message step,
// measured with every pair of the host in its cycle of bursts and
// all-reduces in step; there the pairs fall into step and the skew stays a
// few microseconds, inside W. Beside another pipeline stage's ranks, in
// their own cycle out of step with the pair, the pair's skew is not
// absorbed: sim charges a collective over a pipeline stage's group one more
// such wake-up, the partner behind's late arrival,
//
//	W · share        (share: coreWaitShare of the members' activity)
//
// on top of its message steps' waits (coreWaitS): W where the other
// stage's ranks were active beside the members' burst (share 1), nothing
// where they slept in a receive (share 0, a one-micro-batch pipeline or a
// pipeline's first and last micro-batch). Off where the ranks do not
// outnumber the cores (single, tp2, pp2: no skew measured there) and
// without a pipeline (tp2-dp2, tp4: the replicas or the group's members
// run the same cycle in step, the placement W was measured at).

// partnerLateS is the late arrival of the partner behind charged to
// collective op after burstS seconds of compute run at a mean activity of
// stretch (rankState.activity): W · share for a collective of a pipeline
// (PP > 1) on a host whose ranks outnumber its cores, else 0.
func partnerLateS(table *OpTable, plan *partition.Plan, op *partition.Op, burstS, stretch float64) float64 {
	cores := hostCores(plan)
	if cores <= 0 || table == nil || plan.Config.Parallel.PP <= 1 {
		return 0
	}
	ranks := planRanks(plan)
	if ranks <= cores || messageSteps(op) == 0 {
		return 0
	}
	w, ok := table.lookupClamped(configs.CoreWaitKind, configs.CoreWaitShape(cores), int64(math.Round(burstS*1e9)))
	if !ok {
		return 0
	}
	return w * coreWaitShare(stretch, ranks, cores)
}
