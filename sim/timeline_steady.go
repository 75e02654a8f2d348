package sim

import (
	"math"
	"sort"

	"github.com/partbench/partbench/partition"
)

// Steady-state decode: the timeline simulates decode steps one at a time
// until three consecutive steps repeat with one shift, then writes the
// remaining steps from the last simulated one instead of simulating them.
//
// Why that is sound: from decode step 1 on every step runs the same ops at
// the same cost (no first touch; decode ops are priced once per rank), and
// an op's times are sums and maxima of earlier ops' times and its own cost,
// so moving every event of a step by P moves every event that depends on
// them by P. A step's events depend on its own step's and the previous
// step's (a recv of a step takes the message sent in the same step or, for
// the token fed back to the first stage, in the step before). So once step
// j is step j−1 moved by P, and step j−1 is step j−2 moved by P, every later
// step is the one before moved by P: step k is step j moved by (k−j)·P.
// Schedules that do not settle (a period of two steps, an unbalanced
// pipeline still filling) are simulated step by step to the end, as the
// reference (Options.stepwise) always is.
//
// The written steps' times are the last simulated step's plus (k−j)·P, where
// the simulation would have added each op's cost in turn: the two differ in
// the last bits of a float64. TestSteadyStateMatchesStepwise holds every
// number of the estimate, and every slice of the timeline, to the
// step-by-step simulation within steadyRelTol.

// steadyRelTol is the relative tolerance within which the extrapolated
// estimate equals the step-by-step one (TestSteadyStateMatchesStepwise).
const steadyRelTol = 1e-9

// steadyShiftTol is how far, relative to the latest event time of the step,
// an event's shift between two steps may differ from the period P and
// still count as the same shift: rounding in the simulation's sums (a step
// of the 100,000-GPU dry run adds about 14,000 op costs in one chain, each
// rounded at a few ulps of the clock, about 3e-12 of it at worst), well
// below any difference a real change of schedule makes (an op's cost,
// 1e-6 of the clock or more).
const steadyShiftTol = 1e-11

// steadyMinSteps is the fewest decode steps simulated before extrapolating:
// step 0 (first touches) and three steps of the steady pattern (1, 2, 3).
const steadyMinSteps = 4

// steady is the state of a simulation that stops at each decode step to
// look for the steady state.
type steady struct {
	total int // the decode steps asked for
	limit int // the decode steps simulated so far
	// recent holds the decode ops' times of the last three simulated steps
	// where the simulation keeps no slices (headline runs): step k's op i
	// of simulated rank ri is recent[k%3][decBase[ri]+i].
	recent [3][]stepOpTimes
	// arrive holds when each decode send's message arrives, for the last
	// three simulated steps (indexed as recent; 0 for other ops): with the
	// ops' times, the state a step leaves to the next (clocks, a channel's
	// last arrival, messages not yet received).
	arrive  [3][]float64
	decBase []int
	n       int     // one decode step's ops over the simulated ranks
	period  float64 // P, once found
	from    int     // the last simulated step, once found
}

// newSteady prepares simulation s (its ranks and output set up, nothing
// run) to simulate decode steps until they settle, or nil where it cannot:
// too few steps to gain anything, a rank with no decode step, or the
// step-by-step reference asked for.
func newSteady(s *simulator, steps int) *steady {
	if s.opts.stepwise || steps <= steadyMinSteps {
		return nil
	}
	// The plan's runs (timelineMemo) have the same simulated ranks and
	// decode Programs: each reuses the last one's buffers, cleared.
	memo := s.work.timelineMemo(s) // timeline_stages.go: once per plan
	st := &steady{total: steps, limit: steadyMinSteps, decBase: memo.decBase[:0]}
	n := 0
	for _, r := range s.ranks {
		if len(r.dec) == 0 || r.items != nil {
			return nil
		}
		st.decBase = append(st.decBase, n)
		n += len(r.dec)
	}
	memo.decBase = st.decBase
	st.n = n
	if memo.balanced == 0 {
		memo.balanced = -1
		if channelsBalanced(s) {
			memo.balanced = 1
		}
	}
	if memo.balanced < 0 {
		return nil
	}
	for k := range st.arrive {
		st.arrive[k] = cleared(memo.arrive[k], n)
		memo.arrive[k] = st.arrive[k]
		if s.base == nil { // headline: keep the last three steps for the check
			st.recent[k] = cleared(memo.recent[k], n)
			memo.recent[k] = st.recent[k]
		}
	}
	for _, r := range s.ranks {
		r.steps = st.limit
	}
	return st
}

// cleared is b's first n elements set to zero, or n new ones where b
// holds fewer.
func cleared[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// channelsBalanced says whether each decode step sends as many messages on
// every channel between simulated ranks as it receives, and the prefill
// leaves at most one step's worth unreceived on it (none received before
// it is sent), as partition's Programs do (the last stage's tokens of the
// prefill are received in decode step 0): then each step's recvs take
// messages of the same step or the one before, and what a step leaves to
// the next is its own events. Where it does not hold (a channel that runs
// dry after some steps, or backs up), every step is simulated.
func channelsBalanced(s *simulator) bool {
	// A channel's flow is kept with its sender, a simulated rank: the
	// flows of simulated rank ri are flows[start[ri]:start[ri+1]], one per
	// peer it sends to, found by a linear look-up (a pipeline rank sends to
	// one or two peers): two slices a plan, no map.
	type flow struct{ peer, sends, bal, carry int }
	start := make([]int, len(s.ranks)+1)
	flows := make([]flow, 0, 2*len(s.ranks))
	find := func(lo, hi, peer int) *flow {
		for i := lo; i < hi; i++ {
			if flows[i].peer == peer {
				return &flows[i]
			}
		}
		return nil
	}
	for ri, r := range s.ranks {
		start[ri] = len(flows)
		for ph, ops := range [2][]partition.Op{r.dec, r.pre} {
			for i := range ops {
				if ops[i].Kind != partition.Send {
					continue
				}
				peer := r.peer(&ops[i]) // speed.go: a template's op read with the rank's labels
				f := find(start[ri], len(flows), peer)
				if f == nil {
					flows = append(flows, flow{peer: peer})
					f = &flows[len(flows)-1]
				}
				if ph == 0 { // decode
					f.sends++
					f.bal++
				} else {
					f.carry++
				}
			}
		}
	}
	start[len(s.ranks)] = len(flows)
	for ri, r := range s.ranks {
		rank := s.ids[ri]
		for ph, ops := range [2][]partition.Op{r.dec, r.pre} {
			for i := range ops {
				if ops[i].Kind != partition.Recv {
					continue
				}
				// A recv on a channel no simulated rank sends on would
				// leave it short (bal or carry below 0): not balanced.
				src := -1
				if p := r.peer(&ops[i]); p >= 0 && p < len(s.index) {
					src = s.index[p]
				}
				if src < 0 {
					return false
				}
				f := find(start[src], start[src+1], rank)
				if f == nil {
					return false
				}
				if ph == 0 {
					f.bal--
				} else {
					f.carry--
				}
			}
		}
	}
	for _, f := range flows {
		if f.bal != 0 || f.carry < 0 || f.sends > 0 && f.carry > f.sends {
			return false
		}
	}
	return true
}

// arrival records when the message of simulated rank ri's send it arrives
// (step).
func (st *steady) arrival(ri int, it item, at float64) {
	if st == nil || it.phase != partition.Decode {
		return
	}
	st.arrive[it.step%3][st.decBase[ri]+it.index] = at
}

// keep records a decode slice for the check where the simulation keeps no
// slices (emit).
func (st *steady) keep(ri, pc int, r *rankState, sl *Slice) {
	if st == nil || st.recent[0] == nil || sl.Phase != partition.Decode {
		return
	}
	i := pc - len(r.pre) - sl.Step*len(r.dec)
	st.recent[sl.Step%3][st.decBase[ri]+i] = stepOpTimes{sl.StartS, sl.EndS, sl.WaitS}
}

// stepOpTimes is what the steady state is recognised by: an op's start, end
// and wait.
type stepOpTimes struct{ start, end, wait float64 }

// times is simulated rank ri's op i in decode step k (one of the last
// three simulated).
func (st *steady) times(s *simulator, ri, k, i int) stepOpTimes {
	if st.recent[0] != nil {
		return st.recent[k%3][st.decBase[ri]+i]
	}
	sl := st.slice(s, ri, k, i)
	return stepOpTimes{sl.StartS, sl.EndS, sl.WaitS}
}

// slice is simulated rank ri's packed slice of op i in decode step k, where
// the simulation keeps its slices.
func (st *steady) slice(s *simulator, ri, k, i int) *sliceTimes {
	r := s.ranks[ri]
	return s.slot(ri, len(r.pre)+k*len(r.dec)+i)
}

// settled is called when every rank has run st.limit decode steps. It
// either finds the steady state and writes the remaining steps (true),
// or has simulated every step (true), or lets the simulation run one more
// step (false).
func (st *steady) settled(s *simulator) bool {
	if p, ok := st.shift(s, st.limit-1); ok {
		st.period, st.from = p, st.limit-1
		st.extrapolate(s)
		return true
	}
	if st.limit >= st.total {
		return true
	}
	st.limit++
	for _, r := range s.ranks {
		r.steps = st.limit
	}
	return false
}

// release gives every rank all its steps and stops looking for the steady
// state: where the ranks cannot all reach the step they are stopped at (a
// recv waiting for a message of a later step, or Programs that deadlock),
// the simulation goes on step by step, and a deadlock is reported as that
// simulation reports it.
func (st *steady) release(s *simulator) {
	for _, r := range s.ranks {
		r.steps = st.total
	}
	s.steady = nil
}

// shift says whether decode steps j−2, j−1 and j (j ≥ 3) are one step
// moved by the same P > 0 (within steadyShiftTol), and returns P: every
// slice's start and end moved by P, its wait unchanged, and every send's
// message arriving P later.
func (st *steady) shift(s *simulator, j int) (float64, bool) {
	if j < 3 {
		return 0, false
	}
	p := st.times(s, 0, j, 0).start - st.times(s, 0, j-1, 0).start
	if !(p > 0) {
		return 0, false
	}
	latest := 0.0
	for ri, r := range s.ranks {
		for i := range r.dec {
			latest = max(latest, st.times(s, ri, j, i).end)
		}
	}
	tol := steadyShiftTol * latest
	for ri, r := range s.ranks {
		for i := range r.dec {
			a, b, c := st.times(s, ri, j-2, i), st.times(s, ri, j-1, i), st.times(s, ri, j, i)
			var da, db float64 // a send's message's arrivals, moved by P
			if r.dec[i].Kind == partition.Send {
				x := st.decBase[ri] + i
				aa, ab, ac := st.arrive[(j-2)%3][x], st.arrive[(j-1)%3][x], st.arrive[j%3][x]
				da, db = ab-aa-p, ac-ab-p
			}
			for _, d := range [...]float64{
				b.start - a.start - p, c.start - b.start - p,
				b.end - a.end - p, c.end - b.end - p,
				b.wait - a.wait, c.wait - b.wait,
				da, db,
			} {
				if !(math.Abs(d) <= tol) {
					return 0, false
				}
			}
		}
	}
	return p, true
}

// extrapolate writes decode steps from+1 … total−1 as step from moved by
// (k − from)·P: into the timeline's slices (each starting where the rank's
// previous one ended), or where it keeps none, into the sample ends the
// headline numbers are read from. Each rank then stands at its end.
func (st *steady) extrapolate(s *simulator) {
	j, p := st.from, st.period
	var fl *stepFlows
	if s.ends == nil {
		fl = newStepFlows(s, st)
	}
	for ri, r := range s.ranks {
		r.steps = st.total
		var prevEnd float64 // the end of the rank's last slice so far
		if s.ends == nil {
			prevEnd = st.slice(s, ri, j, len(r.dec)-1).EndS
		}
		if s.uses != nil { // a summary: the written steps' opUses, as the slices below
			st.extrapolateUses(s, ri, r)
			r.pc = r.count()
			continue
		}
		for k := j + 1; k < st.total; k++ {
			m := float64(k - j)
			if s.ends != nil { // the headline numbers read the samples' ends alone
				for i := range r.dec {
					if op := &r.dec[i]; op.Kind == partition.Sample {
						s.ends.add(&Slice{Phase: partition.Decode, Step: k, Op: op, EndS: st.times(s, ri, j, i).end + m*p})
					}
				}
				continue
			}
			for i := range r.dec {
				sl := st.slice(s, ri, k, i) // written in place: step j's attributes
				*sl = *st.slice(s, ri, j, i)
				// A rank's op starts where its previous one ended (its
				// clock), as in the simulation: so the written slices keep
				// their order where rounding would put a start before the
				// previous end.
				sl.StartS = prevEnd
				sl.EndS = max(prevEnd, sl.EndS+m*p)
				prevEnd = sl.EndS
				if sl.Flow != 0 {
					sl.Flow = fl.flow(ri, i, k)
				}
			}
		}
		r.pc = r.count()
	}
	if fl != nil {
		s.flows += (st.total - 1 - j) * fl.perStep
	}
}

// extrapolateUses is extrapolate for simulated rank ri of a summary run:
// each op of a written step is its step-from opUse starting where the
// rank's previous op ended and ending at the later of that and its end
// moved by (k − from)·P, as extrapolate writes the slices, and each
// sample's end goes to the headline numbers.
func (st *steady) extrapolateUses(s *simulator, ri int, r *rankState) {
	j, p := st.from, st.period
	at := func(k, i int) *opUse { return &s.uses[s.useBase[ri]+len(r.pre)+k*len(r.dec)+i] }
	prevEnd := at(j, len(r.dec)-1).end
	for k := j + 1; k < st.total; k++ {
		m := float64(k - j)
		for i := range r.dec {
			u := *at(j, i)
			u.start = prevEnd
			u.end = max(prevEnd, u.end+m*p)
			prevEnd = u.end
			*at(k, i) = u
			if op := &r.dec[i]; op.Kind == partition.Sample {
				s.ends.add(&Slice{Phase: partition.Decode, Step: k, Op: op, EndS: u.end})
			}
		}
	}
}

// stepFlows numbers the flows of the written steps: each send of step k > j
// takes a new number (the simulation's next ones, step by step, in rank and
// op order), and each recv the number of the send its template in step j
// took its message from, that many steps back (the same step or one or two
// before: the FIFO channels pair the n-th send with the n-th recv, and every
// step sends and receives alike on each channel).
type stepFlows struct {
	s       *simulator
	st      *steady
	perStep int
	ord     []int // a send's position among a step's sends (decBase[ri]+i)
	src     []int // a recv's send: its decBase[ri]+i, −1 none
	lag     []int // and how many steps before the recv's step
}

func newStepFlows(s *simulator, st *steady) *stepFlows {
	j := st.from
	n := st.n
	f := &stepFlows{s: s, st: st, ord: make([]int, n), src: make([]int, n), lag: make([]int, n)}
	type at struct{ pos, step int }
	m := 0 // the sends of one step, for the map's size: three steps of them
	for _, r := range s.ranks {
		for i := range r.dec {
			if r.dec[i].Kind == partition.Send {
				m++
			}
		}
	}
	sends := make(map[int]at, 3*m)
	for ri, r := range s.ranks {
		for i := range r.dec {
			pos := st.decBase[ri] + i
			f.src[pos] = -1
			if r.dec[i].Kind == partition.Send {
				f.ord[pos] = f.perStep
				f.perStep++
				for k := j - 2; k <= j; k++ {
					sends[st.slice(s, ri, k, i).Flow] = at{pos, k}
				}
			}
		}
	}
	for ri, r := range s.ranks {
		for i := range r.dec {
			if r.dec[i].Kind != partition.Recv {
				continue
			}
			if a, ok := sends[st.slice(s, ri, j, i).Flow]; ok {
				f.src[st.decBase[ri]+i], f.lag[st.decBase[ri]+i] = a.pos, j-a.step
			}
		}
	}
	return f
}

// flow is the flow number of simulated rank ri's op i in written step k.
func (f *stepFlows) flow(ri, i, k int) int {
	pos := f.st.decBase[ri] + i
	if f.s.ranks[ri].dec[i].Kind == partition.Send {
		return f.sendFlow(pos, k)
	}
	if f.src[pos] < 0 {
		return 0 // its send lies before the steps looked at: left unpaired
	}
	return f.sendFlow(f.src[pos], k-f.lag[pos])
}

// sendFlow is the flow of the send at pos in step k: the simulated one's up
// to step st.from, a new number after.
func (f *stepFlows) sendFlow(pos, k int) int {
	j := f.st.from
	if k <= j {
		ri := sort.Search(len(f.st.decBase), func(x int) bool { return f.st.decBase[x] > pos }) - 1
		return f.st.slice(f.s, ri, k, pos-f.st.decBase[ri]).Flow
	}
	return f.s.flows + (k-j-1)*f.perStep + f.ord[pos] + 1
}
