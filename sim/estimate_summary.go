package sim

import (
	"errors"
	"slices"

	"github.com/partbench/partbench/partition"
)

// An estimate's summary: what FromEstimate reads (TTFT, TPOT, the token
// rate, both phases' bubble fractions and the decode bottleneck), which is
// all Refine reports of a re-run where SearchSpec.SummaryOnly is set. The
// timeline is simulated as for the whole estimate, but keeps of each op
// only its times, its bound and whether it is a recv (opUse, a fifth of a
// Slice) instead of its slice, and the estimate leaves out what the summary
// does not read: the timeline itself, the per-rank rows (fixed costs, busy
// and idle times, pricing counts), the HBM floor and traffic per step,
// communication, collectives and notes. The bubble fractions and the
// bottleneck are summed from the opUses in the order windowUses sums the
// slices, so every number is the whole estimate's to the bit
// (TestSummaryIsFromEstimate).

// errNoSummary is returned by a summary run that met a bound windowUses
// does not list (its fallback reads slices): the caller runs the whole
// estimate instead.
var errNoSummary = errors.New("sim: the summary cannot sum this timeline's bounds")

// opUse is what the summary keeps of one op of a simulated rank's timeline:
// its slice's start, end and wait, the position of its bound in useBounds,
// its phase (0 prefill, 1 decode, 2 other) and whether it is a recv.
type opUse struct {
	start, end, wait float64
	bound            int8
	phase            uint8
	recv             bool
}

func phaseCode(p partition.Phase) uint8 {
	switch p {
	case partition.Prefill:
		return 0
	case partition.Decode:
		return 1
	}
	return 2
}

func useOf(sl *Slice) opUse {
	return opUse{start: sl.StartS, end: sl.EndS, wait: sl.WaitS, bound: int8(useBoundIndex(sl.Bound)),
		phase: phaseCode(sl.Phase), recv: sl.Op.Kind == partition.Recv}
}

// presizeUses is presizeSlices for opUses: one per item of each simulated
// rank's run order, rank by rank.
func presizeUses(s *simulator) {
	var n int
	s.useBase, n = itemBases(s)
	s.uses = make([]opUse, n)
}

// recordUse keeps simulated rank ri's slice of item pc as an opUse.
func (s *simulator) recordUse(ri, pc int, sl *Slice) {
	if s.uses != nil {
		s.uses[s.useBase[ri]+pc] = useOf(sl)
	}
}

// summaryAllowed says whether an estimate of plan (one replica of a
// deployment of replicas) can be a summary: not where a host's cores are
// shared among its ranks (shareCores re-runs the timeline from the whole
// one's slices) or op times are measured per rank.
func summaryAllowed(plan *partition.Plan, replicas int, opts Options) bool {
	if opts.Measured != nil || opts.EveryRank {
		return false
	}
	cores := hostCores(plan)
	return cores <= 0 || plan.Size()*max(1, replicas) <= cores
}

// summaryUse fills e's prefill and decode bubble fractions, bottlenecks,
// critical ranks and times by bound from the opUses, as windowUses and
// finishPhase do from tl's slices for the prefill window [0, prefill end]
// and the decode window [w0, w1]: per plan rank in rank order, each rank's
// ops in start order (the order sortSlices leaves), the same overlaps
// summed in the same order.
func (s *simulator) summaryUse(tl *Timeline, e *Estimate, w0, w1 float64) error {
	n := tl.Ranks
	div := 1
	if tl.PerStage {
		div = tl.TP
	}
	m := (n + div - 1) / div // by simulated rank, as finishPhase reads them
	preBusy, decBusy := make([]float64, m), make([]float64, m)
	preBy, decBy := make([]boundTimes, m), make([]boundTimes, m)
	prefillEnd := 0.0
	for i := range s.uses {
		if u := &s.uses[i]; u.phase == 0 {
			prefillEnd = max(prefillEnd, u.end)
		}
	}
	for ri := range s.ranks {
		lo := s.useBase[ri]
		hi := len(s.uses)
		if ri+1 < len(s.useBase) {
			hi = s.useBase[ri+1]
		}
		ops := s.uses[lo:hi]
		byStart := func(a, b opUse) int {
			switch {
			case a.start < b.start:
				return -1
			case b.start < a.start:
				return 1
			}
			return 0
		}
		if !slices.IsSortedFunc(ops, byStart) { // as sortSlices orders a rank's slices
			slices.SortStableFunc(ops, byStart)
		}
		rank := s.ids[ri]
		for i := range ops {
			u := &ops[i]
			if u.bound < 0 {
				return errNoSummary
			}
			if u.phase > 1 {
				continue // in no phase's window
			}
			a, b := u.start+u.wait, u.end
			dp, dd := overlap(a, b, 0, prefillEnd), overlap(a, b, w0, w1)
			if u.recv { // a recv's time is waiting for data: idle (its bound still a key)
				dp, dd = 0, 0
			}
			decBusy[rank/div] += dd
			x := &decBy[rank/div]
			x.t[u.bound] += dd
			x.has[u.bound] = true
			if u.phase == 0 {
				preBusy[rank/div] += dp
				x := &preBy[rank/div]
				x.t[u.bound] += dp
				x.has[u.bound] = true
			}
		}
	}
	finishPhase(&e.Prefill, tl, preBusy, func(r int) map[Bound]float64 { return preBy[r/div].asMap() }, 0, prefillEnd)
	finishPhase(&e.Decode, tl, decBusy, func(r int) map[Bound]float64 { return decBy[r/div].asMap() }, w0, w1)
	return nil
}
