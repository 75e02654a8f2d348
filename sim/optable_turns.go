package sim

import (
	"math"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// Op times taken in turns. Above the host's cores a CPU calibration times
// every compute op twice at the run's n ranks: with the n processes
// computing at once (the op's kind) and with them taking turns, a token
// passed round as a pipeline's stages pass a micro-batch on
// (configs.TurnsKind: between two of its turns every other rank has run,
// and the rank finds its caches holding what they left). The timeline
// prices a compute op from the entry taken in turns where its rank
// computes alone — no more ranks computing than cores, the fair share
// max(1, b/C) at 1 — from the entry at once where all n compute (n/C), and
// in proportion between:
//
//	t = t_turns + (t_once − t_turns) · clamp((over − 1)/(n/C − 1), 0, 1)
//
// the same share the core wait's is reckoned by (coreWaitShare). The
// shared-core stretch then multiplies it as before (docs/costmodel.md, "Op
// times taking turns").

// computeTime is the table's time of compute op at fair share over
// (max(1, b/C), 1 where unknown), and whether it has one: the blend above
// where the table has both entries and the plan's ranks outnumber its
// host's cores, else the entry at once (Time), else the one in turns.
func (t *OpTable) computeTime(plan *partition.Plan, op *partition.Op, over float64) (float64, bool) {
	once, ok := t.Time(op)
	cores := hostCores(plan)
	if t == nil || cores <= 0 {
		return once, ok
	}
	full := float64(planRanks(plan)) / float64(cores)
	if full <= 1 {
		return once, ok
	}
	kind, shape, size, context := OpKey(op)
	turns, tok := t.Lookup(configs.TurnsKind(kind), shape, size, context)
	switch {
	case !tok:
		return once, ok
	case !ok:
		return turns, true
	}
	share := math.Min(1, math.Max(0, (over-1)/(full-1)))
	return turns + (once-turns)*share, true
}
