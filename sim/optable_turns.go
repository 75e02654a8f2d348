package sim

import (
	"math"
	"sort"

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
// the same share the core wait's is reckoned by (coreWaitShare), and only
// for the share of the op's occurrences whose burst began cold, after its
// rank waited (coldBursts): a rank that finds its message there computes
// on in its own caches, as its measurement at once does. The shared-core
// stretch then multiplies it as before (docs/costmodel.md, "Op times
// taking turns").

// computeTime is the table's time of compute op, with the executor's op
// gap before it (opGapS), at fair share over
// (max(1, b/C), 1 where unknown) with a share cold of its occurrences
// after its rank waited (coldBursts; 1 where unknown), and whether it has
// one: the blend above, weighted by cold, where the table has both
// entries and the plan's ranks outnumber its host's cores, else the entry
// at once (Time), else the one in turns.
func (t *OpTable) computeTime(plan *partition.Plan, op *partition.Op, over, cold float64) (float64, bool) {
	v, ok := t.computeTimeOp(plan, op, over, cold)
	if ok {
		v += t.opGapS() // the executor's time before the op, outside its timer (optable_gap.go)
	}
	return v, ok
}

// computeTimeOp is computeTime without the op gap: the op's own time.
func (t *OpTable) computeTimeOp(plan *partition.Plan, op *partition.Op, over, cold float64) (float64, bool) {
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
	w := math.Min(1, math.Max(0, cold)) * (1 - share) // the weight of the entry in turns
	return once + (turns-once)*w, true
}

// coldFraction is the share of op's occurrences priced cold (1 where
// unknown: the first simulation, before any timeline).
func (c *coreShare) coldFraction(rank int, phase partition.Phase, op *partition.Op) float64 {
	if c == nil || c.cold == nil {
		return 1
	}
	if v, ok := c.cold[keyOf(rank, phase, op)]; ok {
		return v
	}
	return 1
}

// coldBursts marks each compute slice of tl (by index) whose rank's burst
// began cold: after the rank waited — a receive or collective with idle
// time before it (Slice.WaitS > 0), in which the other ranks took its
// core — or at the start of its Program in the phase (the other ranks ran
// before it). A burst that follows a receive whose message was there, or
// a collective its members reached together, runs on in the caches the
// rank left (a pipeline stage's second micro-batch after its first). A
// send does not end a burst.
func coldBursts(tl *Timeline) map[int]bool {
	type rp struct {
		rank  int
		phase partition.Phase
		step  int
	}
	list := tl.List()
	byRank := map[rp][]int{}
	for i, sl := range list {
		k := rp{sl.Rank, sl.Phase, sl.Step}
		byRank[k] = append(byRank[k], i)
	}
	out := make(map[int]bool)
	for k, idx := range byRank {
		sort.SliceStable(idx, func(a, b int) bool { return list[idx[a]].StartS < list[idx[b]].StartS })
		// The Program's start: cold in prefill (the other ranks ran the
		// iteration before); a decode step that begins with compute goes
		// on from the rank's own step before it.
		cold := k.phase == partition.Prefill
		for _, i := range idx {
			sl := &list[i]
			switch {
			case sl.Op.Kind == partition.Send:
			case !isCompute(sl.Op.Kind):
				cold = sl.WaitS > 0
			default:
				out[i] = cold
			}
		}
	}
	return out
}
