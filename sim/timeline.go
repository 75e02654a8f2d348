package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// Slice is one op on one rank's timeline.
type Slice struct {
	Rank  int
	Phase partition.Phase
	Step  int // decode step; −1 in prefill
	Op    *partition.Op
	// WaitS is the idle time before the op could start (a recv waiting for its
	// message, a collective waiting for the slowest member).
	StartS, EndS, WaitS float64
	Bound               Bound
	Algo                commcount.Algorithm // collectives
	Proto               string
	Link                topology.LinkClass // communication: the (slowest) link class used
	// Flow pairs a send with the recv of its message (0 for other ops).
	Flow              int
	HBMBytes, L2Bytes int64
}

// Timeline is the simulated ranks' ops, each rank's in time order. Ranks
// is the plan's ranks (one replica's). With PerStage, Slices hold one rank
// per pipeline stage, TP index 0, standing for every TP rank of its stage:
// those run the same ops on the same shapes over links alike, so each
// would have the same slices (sim.EstimatePlan checks this and otherwise
// simulates every rank; Options.EveryRank asks for every rank).
type Timeline struct {
	Ranks    int
	PerStage bool
	// TP is the plan's TP degree: rank r's slices are those of rank
	// r − r mod TP when PerStage.
	TP int
	// Slices holds the slices of a timeline kept unpacked (one built by
	// hand, or a simulation's where its slices needed sorting); a
	// simulation's are otherwise packed. Read any timeline's through All,
	// At, Len or List (timeline_packed.go).
	Slices []Slice
	packed *packedSlices
	// settled is the last decode step simulated before the rest were
	// written from it (timeline_steady.go); 0 where every step was simulated.
	settled int
	// chunksWritten is the prefill chunks written rather than simulated
	// (timeline_chunks.go).
	chunksWritten int
	// stagesWritten is the segments (a stage's prefill or decode step)
	// written from alike stages rather than simulated (timeline_stages.go).
	stagesWritten int
}

// StandIn is the simulated rank whose slices are rank r's: in a per-stage
// timeline, TP index 0 of r's stage (partition numbers a stage's ranks
// consecutively, partition.Plan.RankOf).
func (t *Timeline) StandIn(r int) int {
	if !t.PerStage {
		return r
	}
	return partition.StageFirst(r, t.TP)
}

// item is one op in a rank's run order.
type item struct {
	phase partition.Phase
	step  int
	op    *partition.Op
	index int  // the op's index in its Program
	first bool // the rank's first op on its tensor (layer, name): see markFirstTouch
}

type chanKey struct{ src, dst int }

// tensorKey names one weight tensor of a rank (layer −1: outside the layers).
type tensorKey struct {
	layer  int
	tensor string
}

type message struct {
	arrival float64
	flow    int
}

// groupInfo caches a collective group's name, its simulated members
// (simulator indices) and each member's position among them, and the
// group's shape for the collective memo (speed.go). A group is one shared
// slice of the plan (a rank's TPGroup), so it is keyed by its first element
// and length; slices of the same ranks share one groupInfo (by name).
//
// It also holds the collective its members are arriving at: arrivals[i] is
// when member i arrived, n how many have. A group has one at a time: its
// members finish each collective together, so none can arrive at the next
// before all have left this one.
type groupInfo struct {
	name     string
	members  []int
	pos      map[int]int // simulator index → position in members
	shape    collShape
	arrivals []float64
	n        int
}

type groupKey struct {
	first *int
	n     int
}

// rankState is a simulated rank: its run order (items, or the prefill
// Program then steps decode steps of the decode Program: see at), where it
// stands in it, and its clock.
type rankState struct {
	items   []item
	pre     []partition.Op
	dec     []partition.Op
	steps   int
	first   []bool // of the first len(pre)+len(dec) items: markFirstTouch
	pc      int
	clock   float64
	arrived bool // registered at the collective it is blocked on
	// burstS is the compute run since its last communication op (the
	// burst a core wait is looked up at, optable_share.go); burstAloneS the
	// same without the shared-core stretch, burstOverS at the fair share
	// max(1, b/cores) (the receive wait's share, optable_share.go).
	burstS, burstAloneS, burstOverS float64
	// burstActS is burstAloneS at max(1, a/cores), a the ranks active
	// beside it (coreShare.activeFactor): the collective's core wait
	// share (rankState.activity).
	burstActS float64
	// turnS is the compute run since its last communication op, a send
	// included: the turn a send ends (optable_turnoff.go).
	turnS float64
	// memo is the cost of each op of the decode Program, priced at its
	// first decode step that is not a first touch (speed.go).
	memo    []opMemo
	memoN   int // memo's length, once made (memoOf)
	scratch opMemo
	// curStep and curIndex are item pc's decode step and op index, once
	// advance has moved into the decode steps (curSet; speed.go).
	curStep, curIndex int
	curSet            bool
	// hostS is when the host has queued the current pass's compute ops so
	// far (hostOpS): set to the clock at the pass's first op, as the
	// executor syncs after each pass. prefillHostWaitS sums its compute
	// ops' waits for the host in the prefill.
	hostS, prefillHostWaitS float64
	// stop, when above 0, is where the rank's run order ends for now: the
	// start of a prefill chunk the simulation looks for the steady state at
	// (timeline_chunks.go).
	stop int
	// like, where set, says pre and dec are the template's ops of the
	// rank's kind, read with the rank's labels (speed.go: peer, group, own).
	like *likeRank
}

// simulator runs the simulated ranks' ops against each other: compute
// takes its roofline time; a send posts a message that occupies its link
// channel and does not block the sender; a recv waits for its message; a
// collective starts when its last simulated member arrives. Simulator
// index i is plan rank ids[i]; residency is indexed like ranks.
type simulator struct {
	plan      *partition.Plan
	opts      Options
	table     *OpTable // the hardware profile's measured op times (nil: none)
	perStage  bool
	ids       []int
	index     []int // plan rank → simulator index, −1: not simulated (nil ids: every rank)
	groups    map[groupKey]*groupInfo
	byName    map[string]*groupInfo
	residency []float64
	ranks     []*rankState
	chanFree  map[chanKey]float64
	inbox     map[chanKey][]message // FIFO per ordered pair
	flows     int
	out       []Slice
	pk        *packedSlices                      // with base: the slices packed (timeline_packed.go), not in out
	collMemo  map[collMemoKey]CollectiveEstimate // speed.go
	// ends, when set, takes the slices instead of out: only the sample
	// ops' ends are kept (speed.go).
	ends *sampleEnds
	// base, when set, is where each simulated rank's slices start in out
	// (presizeSlices): a slice is placed at base + its item's position.
	base []int
	work *planWork // what the runs of one estimate share (nil: nothing)
	// steady, when set, simulates decode steps until they settle and
	// writes the rest (timeline_steady.go).
	steady *steady
	// chunks, when set, does the same with a chunked prefill's middle
	// chunks (timeline_chunks.go).
	chunks        *chunkSteady
	chunksWritten int
	// stages, when set, writes alike pipeline stages' segments from the
	// stages before them (timeline_stages.go).
	stages *stageWriter
	// uses, when set (with ends), keeps each op's times and bound instead
	// of its slice, rank by rank from useBase (estimate_summary.go).
	uses    []opUse
	useBase []int
}

func groupName(ranks []int) string {
	b := make([]byte, 0, 6*len(ranks))
	for i, r := range ranks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(r), 10)
	}
	return string(b)
}

// group is the cached name and simulated members of a collective's group.
func (s *simulator) group(g []int) *groupInfo {
	if len(g) == 0 {
		return &groupInfo{}
	}
	k := groupKey{&g[0], len(g)}
	if gi := s.groups[k]; gi != nil {
		return gi
	}
	name := s.work.groupName(k, g) // speed.go
	if gi := s.byName[name]; gi != nil {
		s.groups[k] = gi
		return gi
	}
	gi := &groupInfo{name: name, pos: map[int]int{}, shape: shapeOf(&s.plan.System.Topology, g)}
	for _, m := range g {
		if i := s.index[m]; i >= 0 {
			gi.pos[i] = len(gi.members)
			gi.members = append(gi.members, i)
		}
	}
	s.groups[k] = gi
	if s.byName == nil {
		s.byName = map[string]*groupInfo{}
	}
	s.byName[name] = gi
	return gi
}

func (s *simulator) run() (*Timeline, error) {
	if s.ids == nil { // every rank, simulator index = rank
		s.index = make([]int, len(s.ranks))
		for i := range s.ranks {
			s.ids = append(s.ids, i)
			s.index[i] = i
		}
	}
	if s.groups == nil {
		s.groups = map[groupKey]*groupInfo{}
	}
	s.stages = newStageWriter(s) // timeline_stages.go
	// A rank that reads its template's ops (likeRank) and is not written
	// from the stage before it is simulated: its own Programs first.
	for ri, r := range s.ranks {
		if r.like != nil && (s.stages == nil || !s.stages.alike[ri]) {
			s.own(ri)
		}
	}
	for {
		if err := s.runUntilDone(); err != nil {
			return nil, err
		}
		if s.chunks != nil { // every rank at a prefill chunk's start
			s.chunks.settle(s)
			continue
		}
		if s.steady == nil || s.steady.settled(s) {
			break
		}
	}
	tl := &Timeline{Ranks: len(s.index), PerStage: s.perStage, TP: s.plan.TP}
	switch {
	case s.pk != nil && s.pk.sorted():
		s.pk.index = nil
		tl.packed = s.pk
	case s.pk != nil:
		tl.Slices = s.pk.list()
		sortSlices(tl.Slices) // by rank, then start (stable)
	default:
		sortSlices(s.out)
		tl.Slices = s.out
	}
	if s.steady != nil {
		tl.settled = s.steady.from
	}
	tl.chunksWritten = s.chunksWritten
	if s.stages != nil {
		tl.stagesWritten = s.stages.written
	}
	return tl, nil
}

// runUntilDone runs the ranks' ops until every rank has run its run order
// (as far as it now goes: see steady).
func (s *simulator) runUntilDone() error {
	for !s.finished() {
		progressed := false
		for ri, r := range s.ranks {
			if s.stages != nil && s.stages.write(s, ri) { // timeline_stages.go
				progressed = true
			}
			for r.pc < r.count() {
				ok, err := s.step(ri)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				progressed = true
			}
		}
		if !progressed {
			if s.chunks != nil { // stopped at a chunk: go on as the step-by-step simulation would
				s.chunks.release(s)
				continue
			}
			if s.steady != nil { // stopped at a step: go on as the step-by-step simulation would
				s.steady.release(s)
				continue
			}
			var stuck []string
			for ri, r := range s.ranks {
				if r.pc < r.count() {
					s.own(ri)
					it := r.at(r.pc)
					stuck = append(stuck, fmt.Sprintf("rank %d at %s %s (micro-batch %d)", s.ids[ri], it.phase, it.op.Name, it.op.Microbatch))
				}
			}
			return fmt.Errorf("sim: the Programs deadlock: %s", strings.Join(stuck, "; "))
		}
	}
	return nil
}

func (s *simulator) finished() bool {
	for _, r := range s.ranks {
		if r.pc < r.count() {
			return false
		}
	}
	return true
}

// receiverWaitedS is how long plan rank peer, the receiver of simulated
// rank ri's send on channel key, has waited in the receive of that message
// at time t (the message's departure), or −1 where it is not yet waiting
// for it as far as the simulation knows. The simulation runs each rank on
// until it blocks, so at a send its receiver is in one of three states: at
// the receive of this message — its next op is a recv from the sender
// with no message queued before this one — which began at its clock (a
// blocked rank's clock stays where its recv began); behind it, its clock
// before its next op, which is not that receive (blocked on another peer,
// or not yet run this sweep); or with earlier messages of the channel
// still to take, which it takes first. Only the first is known to be a
// wait for this message, and only it counts: the others are priced as
// awake (a pipeline's stages, each blocked on its recv from the stage
// before by the time that stage sends, are the first; a micro-batch sent
// while the receiver has the one before to take is the third). A rank
// held where the simulation stops for now (the decode steps simulated so
// far, timeline_steady.go; a prefill chunk, timeline_chunks.go) is at its
// next op all the same; one past its whole run order receives nothing
// more.
func (s *simulator) receiverWaitedS(ri, peer int, key chanKey, t float64) float64 {
	if peer < 0 || peer >= len(s.index) || len(s.inbox[key]) > 0 {
		return -1
	}
	pi := s.index[peer]
	if pi < 0 {
		return -1
	}
	rr := s.ranks[pi]
	if rr.pc >= s.runLength(rr) {
		return -1
	}
	op := rr.at(rr.pc).op
	if op.Kind != partition.Recv || rr.peer(op) != s.ids[ri] {
		return -1
	}
	return t - rr.clock
}

// runLength is rank r's whole run order's length, past any hold of
// count's: the prefill and every decode step the run asks for (a steady
// state's simulation holds r.steps at the steps simulated so far).
func (s *simulator) runLength(r *rankState) int {
	if r.items != nil {
		return len(r.items)
	}
	steps := r.steps
	if s.steady != nil {
		steps = max(steps, s.steady.total)
	}
	return len(r.pre) + steps*len(r.dec)
}

// step tries to run simulated rank ri's next op; false means it is blocked.
func (s *simulator) step(ri int) (bool, error) {
	r := s.ranks[ri]
	if r.like != nil {
		// A rank that reads its template's ops (likeRank) takes its own
		// where it runs one; a recv with no message blocks it as below.
		if op := r.at(r.pc).op; op.Kind == partition.Recv && len(s.inbox[chanKey{r.peer(op), s.ids[ri]}]) == 0 {
			return false, nil
		}
		s.own(ri)
	}
	it := r.at(r.pc)
	op := it.op
	g := &s.plan.System.GPU
	rank := s.ids[ri]
	sl := Slice{Rank: rank, Phase: it.phase, Step: it.step, Op: op}
	if it.index == 0 {
		r.hostS = r.clock // the executor synced at the last pass's end: it queues this one from now
	}
	var m *opMemo // speed.go: what a decode op costs, priced once (memoOf), taken where the op runs
	switch op.Kind {
	case partition.Send:
		m = r.memoOf(it)
		sl.StartS = r.clock
		// The turn's time off its core, before the send's launch: the
		// slice's wait (optable_turnoff.go).
		sl.WaitS = turnOffS(s.table, s.plan, r.turnS, r.stretch())
		r.turnS = 0
		sl.EndS = r.clock + sl.WaitS + launchS(g, it.phase)
		sl.Bound = BoundLatency
		if !m.ok {
			m.link = s.plan.System.Topology.Path(rank, op.Peer).Class
			est := P2P(s.plan.System, rank, op.Peer, op.Bytes)
			if t, ok := s.table.Time(op); ok { // a measured one-way transfer
				est.TimeS = t
			}
			m.cost.TimeS, m.ok = est.TimeS, true
			m.cost.FixedS = sendCallS(s.table, op) // the sender's own time in its call (optable_share.go)
			m.asleep, m.hasAsleep = sendCallAsleepAtS(s.table, s.plan, s.opts.Unbound, rank, op)
		}
		sl.Link = m.link
		key := chanKey{rank, op.Peer}
		s.stages.sending(s, key) // timeline_stages.go: messages a written stage left pending go first
		free := s.chanFree[key]
		start := max(sl.EndS, free)
		callS := m.cost.FixedS
		if m.hasAsleep { // the receiver asleep in its receive, or awake (optable_share.go)
			callS = sendCallAtS(m.cost.FixedS, m.asleep, m.hasAsleep, s.receiverWaitedS(ri, op.Peer, key, start), receiverSpinS(s.plan))
		}
		s.chanFree[key] = start + m.cost.TimeS
		s.flows++
		sl.Flow = s.flows
		s.inbox[key] = append(s.inbox[key], message{start + m.cost.TimeS, s.flows})
		s.steady.arrival(ri, it, start+m.cost.TimeS) // timeline_steady.go
		launched := sl.EndS
		sl.EndS += callS // the message leaves at the launch; the sender is busy in its call
		r.clock = sl.EndS
		s.chunks.record(ri, r.pc, &sl, start-launched, start-free, start+m.cost.TimeS) // timeline_chunks.go
		s.stages.record(s, ri, r.pc, &sl, launchS(g, it.phase), m.cost.TimeS, callS)   // timeline_stages.go
	case partition.Recv:
		key := chanKey{op.Peer, rank}
		q := s.inbox[key]
		if len(q) == 0 {
			return false, nil
		}
		m = r.memoOf(it)
		arrival := q[0].arrival
		sl.Flow = q[0].flow
		s.inbox[key] = q[1:]
		sl.StartS = r.clock
		sl.EndS = max(r.clock, arrival)
		if arrival > r.clock { // blocked: woken when it arrives (optable_share.go)
			sl.EndS += recvWaitSharedS(s.table, s.plan, r.burstS, r.stretch())
		}
		r.burstS, r.burstAloneS, r.burstOverS, r.burstActS, r.turnS = 0, 0, 0, 0, 0
		sl.WaitS = sl.EndS - r.clock
		if !m.ok {
			m.link, m.ok = s.plan.System.Topology.Path(op.Peer, rank).Class, true
		}
		sl.Link = m.link
		sl.Bound = linkBound(sl.Link)
		r.clock = sl.EndS
		s.chunks.record(ri, r.pc, &sl, sl.WaitS, sl.EndS-arrival, arrival)
		s.stages.record(s, ri, r.pc, &sl, 0, 0, 0)
	case partition.AllReduce, partition.AllGather:
		return s.collective(ri, it)
	default:
		m = r.memoOf(it)
		if !m.ok {
			c := computeCost(g, s.plan.Model.DType, op, s.residency[ri], it.first, it.phase)
			if t, ok := s.table.computeTime(s.plan, op, s.opts.share.overFactor(rank, it.phase, op), s.opts.share.coldFraction(rank, it.phase, op)); ok { // the op measured (optable_turns.go); the pass's host step cost stays
				c.FixedS = stepFixedS(g, it.phase, op)
				c.TimeS, c.Bound = graphTableS(g, it.phase, t)+c.FixedS, BoundTable
			}
			c.TimeS *= s.opts.share.factor(rank, it.phase, op) // a host's cores shared among its ranks
			if t, ok := s.opts.Measured.time(rank, it.phase, it.index); ok {
				c.TimeS, c.Bound = t, BoundMeasured
			}
			m.cost, m.ok = c, true
		}
		c := &m.cost
		sl.StartS, sl.EndS, sl.Bound = r.clock, r.clock+c.TimeS, c.Bound
		if c.Bound != BoundMeasured { // a measured op's marks hold the host's pace already
			if h := hostOpS(g, it.phase); h > 0 {
				r.hostS += h
				if wait := r.hostS - r.clock; wait > 0 { // the device waits for the host to queue it: part of the op's time, as a launch is
					sl.EndS += wait
					if it.phase == partition.Prefill {
						r.prefillHostWaitS += wait
					}
				}
			}
		}
		sl.HBMBytes, sl.L2Bytes = c.HBMBytes, c.L2Bytes
		r.clock = sl.EndS
		r.burstS += c.TimeS
		r.turnS += c.TimeS
		alone := c.TimeS / s.opts.share.factor(rank, it.phase, op)
		r.burstAloneS += alone
		r.burstOverS += alone * s.opts.share.overFactor(rank, it.phase, op)
		r.burstActS += alone * s.opts.share.activeFactor(rank, it.phase, op)
		s.chunks.record(ri, r.pc, &sl, 0, 0, 0)
		s.stages.record(s, ri, r.pc, &sl, c.TimeS, 0, 0)
	}
	s.emit(ri, r.pc, &sl)
	s.recordUse(ri, r.pc, &sl)
	r.advance()
	return true, nil
}

func (s *simulator) collective(ri int, it item) (bool, error) {
	r := s.ranks[ri]
	op := it.op
	gi := s.group(op.Group)
	name := gi.name
	if gi.arrivals == nil {
		gi.arrivals = make([]float64, len(gi.members))
	}
	if !r.arrived {
		gi.arrivals[gi.pos[ri]] = r.clock
		gi.n++
		r.arrived = true
	}
	if gi.n < len(gi.members) {
		return false, nil
	}
	// Everyone is here: run it for all members at once.
	cop, _ := op.Kind.Comm()
	est, err := s.collectiveMemo(gi, cop, op)
	if err != nil {
		return false, fmt.Errorf("sim: %s on ranks %s: %w", op.Name, name, err)
	}
	start := 0.0
	for _, a := range gi.arrivals {
		start = max(start, a)
	}
	end := start + est.TimeS + launchS(&s.plan.System.GPU, it.phase)
	bound := linkBound(est.Link)
	if est.LatencyBound {
		bound = BoundLatency
	}
	if t, ok := s.table.Time(op); ok { // measured at this group size and payload
		end, bound = start+t, BoundTable
	}
	burst, stretch := 0.0, 1.0
	for _, m := range gi.members {
		burst, stretch = max(burst, s.ranks[m].burstS), max(stretch, s.ranks[m].activity())
	}
	if w, ok := inPlaceWaitS(s.table, op, burst); ok {
		end += w // the call in place beyond back to back, the partner's wake-up in it (optable_inplace.go)
	} else {
		end += coreWaitS(s.table, s.plan, op, burst, stretch) // partners scheduled on shared cores (optable_share.go)
	}
	end += partnerLateS(s.table, s.plan, op, burst, stretch) // the partner behind beside another stage (optable_late.go)
	for i, m := range gi.members {
		mr := s.ranks[m]
		mit := mr.at(mr.pc)
		if mit.op.Kind != op.Kind || mit.op.Bytes != op.Bytes {
			return false, fmt.Errorf("sim: rank %d is at %s while rank %d runs %s on group %s", s.ids[m], mit.op.Name, s.ids[ri], op.Name, name)
		}
		sl := Slice{Rank: s.ids[m], Phase: mit.phase, Step: mit.step, Op: mit.op,
			StartS: gi.arrivals[i], EndS: end, WaitS: start - gi.arrivals[i], Bound: bound, Algo: est.Algo, Proto: est.Proto, Link: est.Link}
		s.chunks.record(m, mr.pc, &sl, sl.WaitS, 0, 0)
		s.stages.record(s, m, mr.pc, &sl, est.TimeS, launchS(&s.plan.System.GPU, it.phase), 0)
		s.emit(m, mr.pc, &sl)
		s.recordUse(m, mr.pc, &sl)
		mr.clock = end
		mr.arrived, mr.burstS, mr.burstAloneS, mr.burstOverS, mr.burstActS, mr.turnS = false, 0, 0, 0, 0, 0
		mr.advance()
	}
	gi.n = 0
	return true, nil
}
