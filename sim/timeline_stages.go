package sim

import (
	"slices"

	"github.com/partbench/partbench/partition"
)

// Alike pipeline stages written, not simulated: in a deep pipeline the
// middle stages run the same ops on the same shapes over the same links
// (one layer each on the 100,000-GPU dry run's 1,000 stages), so each of
// them prices every op as the stage before it does. The first stage waits
// for the last stage's token every step, so the stages form a cycle and
// cannot be skipped; each alike stage's segment of the run order — the
// prefill, or one decode step — is written from the last simulated alike
// stage's (the template's) instead, one segment at a time.
//
// How: the timeline records each simulated stage's slices of a segment
// with the costs it added (a compute op's time; a send's launch, transfer
// and call time; a collective's time and launch). When the sweep of the
// ranks reaches a stage at the start of a segment that the stage before it
// has run — simulated (the template) or written from the same template —
// and the stage is alike to it (stagesAlike: the same op fields but for
// names, layers, peers and groups, the same residency and first touches,
// its sends to the next stage and recvs from the one before over paths
// equal to the template's, collectives of one simulated member, itself, on
// groups of the same shape), its ops are written in order with the
// simulation's own arithmetic on the template's costs: a recv takes its
// message from its channel and ends at max(clock, arrival), a compute op
// ends at clock + cost, a send leaves at max(its launch, the channel's
// previous arrival) and arrives a transfer later, a collective of one
// member starts at the clock. Flows are numbered, messages queued and the
// rank's clock and channel left as the simulation leaves them: the sweep
// would have run the stage's whole segment at the same point (every recv's
// message is there, and a collective of one member never waits). Where a
// written stage runs on past its segment in the same visit and sends on
// the channel its pending messages wait for, they are queued first
// (sending). A template that runs on into its next segment in its own
// visit keeps the record of that one only, and nothing is written from
// the segment before: partition's pipelines stop every stage at a
// segment's end (its next segment begins with a recv from the stage
// before, or the first stage's recv of the last stage's token).
//
// Why that is exact: every time is the same sum or maximum of the same
// floats, in the same order, as the simulation computes it; only the
// pricing (the roofline, the path look-ups, the collective memo) and the
// simulation's per-op bookkeeping are skipped. So, unlike the decode
// steps and prefill chunks extrapolated by a shift (timeline_steady.go,
// timeline_chunks.go), nothing moves in its last bits:
// TestAlikeStagesMatchStepwise holds the timeline and the estimate equal,
// to the bit, to those of a run that simulates every stage
// (Options.noStageWrites), and within steadyRelTol to the stepwise
// reference (Options.stepwise), which writes nothing. It needs costs that
// are functions of the op alone (no op-time table, whose core waits depend
// on the compute run before a wait; no shared cores; no measured op times)
// and does not combine with the chunked prefill's steady state.
//
// A write by a shift (each event of stage k+1 stage k's plus one Δ, found
// where three simulated stages in a row repeat with it) matched the
// stepwise run within 1e-11 too, but moved the golden estimates in their
// last bits (test/layerwise16-tiny's decode busy time by 1.3e-14 relative),
// and saves no more: every op of the whole estimate is a slice, written
// either way, and the arithmetic above is one addition or maximum an op.

// stageRecs is the number of recorded segments kept, one per rank modulo
// it: the template's must survive the rank recorded after it.
const stageRecs = 2

// stageRec is what a simulated stage's op leaves for the stages written
// from it: its slice and the costs it added (a compute op: c[0] its time;
// a send: its launch, its transfer, its call time; a collective: its time
// and its launch).
type stageRec struct {
	sl   Slice
	c    [3]float64
	attr int32   // the slice's attributes packed (timeline_packed.go), −1: not yet
	kind recKind // the op's kind as place reads it, found once here
}

// recKind is what place does with a recorded op: its kind, compared once
// when recorded rather than by name for every stage written from it.
type recKind uint8

const (
	recCompute recKind = iota
	recSample          // a compute op whose end is a headline number
	recSend
	recRecv
	recCollective // all-reduce or all-gather
)

func recKindOf(k partition.Kind) recKind {
	switch k {
	case partition.Send:
		return recSend
	case partition.Recv:
		return recRecv
	case partition.AllReduce, partition.AllGather:
		return recCollective
	case partition.Sample:
		return recSample
	}
	return recCompute
}

// stageWriter is a simulation's state while it writes alike stages.
type stageWriter struct {
	// alike[ri] says simulated rank ri is alike to rank ri−1 (stagesAlike).
	alike []bool
	// rec[ri%stageRecs] holds rank recRank's ops of segment recSeg
	// (−1: the prefill, k: decode step k), recN of them so far.
	rec     [stageRecs][]stageRec
	recRank [stageRecs]int
	recSeg  [stageRecs]int
	recN    [stageRecs]int
	// The write in progress: template rank j in segment seg, the last
	// rank written from it (−1: none).
	j, seg, last int
	// recvs[ri%stageRecs] is how many recvs the recorded segment has.
	recvs [stageRecs]int
	// pend is the messages rank last sent in its written segment, not yet
	// on their channel, pendKey: the next rank takes them from here where
	// it is written too, else flush queues them. next is where place
	// gathers the next ones.
	pend, next []message
	pendKey    chanKey
	written    int // segments written (stage × segment)
}

// newStageWriter prepares simulation s to write alike stages, or returns
// nil where it cannot: the stepwise reference, costs that are not
// functions of the op alone, a chunked prefill's steady state, ranks that
// run item lists, or no rank alike to the one before it.
func newStageWriter(s *simulator) *stageWriter {
	if s.opts.stepwise || s.opts.noStageWrites || s.table != nil || s.plan.System.GPU.HostOpS > 0 || s.opts.share != nil || s.opts.Measured != nil || s.chunks != nil ||
		len(s.ranks) < 3 || len(s.residency) != len(s.ranks) {
		return nil
	}
	for _, r := range s.ranks {
		if r.items != nil {
			return nil
		}
	}
	memo := s.work.timelineMemo(s)
	if memo.alike == nil {
		memo.alike = stagesAlike(s)
	}
	w := &stageWriter{alike: make([]bool, len(s.ranks)), last: -1}
	some, seg := false, 0
	for ri, a := range memo.alike {
		a = a && s.residency[ri] == s.residency[ri-1] // ri ≥ 1 where a
		w.alike[ri] = a
		some = some || a
		seg = max(seg, len(s.ranks[ri].pre), len(s.ranks[ri].dec))
	}
	if !some {
		return nil
	}
	for k := range w.rec {
		w.rec[k] = make([]stageRec, seg)
		w.recRank[k] = -1
	}
	return w
}

// timelineMemo is what the timeline runs of one plan (planWork) share of
// their checks of the simulated ranks' Programs, links and first touches,
// none of which depends on the GPU's speeds: for the simulated ranks ids,
// which rank is alike to the one before but for its residency
// (stagesAlike), and whether the channels balance (channelsBalanced).
type timelineMemo struct {
	ids      []int
	alike    []bool
	balanced int8 // 0: not yet known, 1: yes, −1: no
	// decBase, arrive and recent are the last run's steady-state buffers
	// (newSteady), reused cleared by the next run of the same ranks: the
	// runs of a plan follow one another, never overlap.
	decBase []int
	arrive  [3][]float64
	recent  [3][]stepOpTimes
}

// timelineMemo is w's memo for simulation s's ranks (a fresh one where w
// is nil or kept another set of ranks).
func (w *planWork) timelineMemo(s *simulator) *timelineMemo {
	if w == nil {
		return &timelineMemo{}
	}
	if m := w.timeline; m != nil && slices.Equal(m.ids, s.ids) {
		return m
	}
	w.timeline = &timelineMemo{ids: slices.Clone(s.ids)}
	return w.timeline
}

// stagesAlike says, for each simulated rank ri, whether it runs the same
// ops as rank ri−1 at the same cost where their residency is the same
// (newStageWriter compares it), one stage further down one chain: the
// same op fields but for names, layers, peers and groups (opsAlike), the
// same first touches, its sends to rank ri+1 and recvs from
// ri−1 where ri−1's go to ri and come from ri−2, over paths equal to
// ri−1's, and its collectives on groups of one simulated member (itself)
// of the same shape as ri−1's.
func stagesAlike(s *simulator) []bool {
	out := make([]bool, len(s.ranks))
	lone := &loneMemo{}
	var reps likeReps
	for ri := 1; ri < len(s.ranks); ri++ {
		p, r := s.ranks[ri-1], s.ranks[ri]
		if len(p.pre) != len(r.pre) || len(p.dec) != len(r.dec) || len(p.first) != len(r.first) {
			continue
		}
		// Programs made from one template (planWork.templateOf) have their
		// ops alike and their first touches equal: only the links are
		// compared.
		t := s.work.templateOf(s.ids[ri])
		made := t >= 0 && t == s.work.templateOf(s.ids[ri-1])
		ok := true
		for i := 0; !made && i < len(r.first); i++ {
			if r.first[i] != p.first[i] {
				ok = false
				break
			}
		}
		l := linkCheck{lone: lone, prev: p, cur: r}
		for ph, ops := range [2][2][]partition.Op{{p.pre, r.pre}, {p.dec, r.dec}} {
			if made {
				// Two ranks made from one template run its ops with
				// their own labels: every send to one peer, every
				// recv from one, every group the rank's TP group
				// (partition.LikeLabels), every other field the
				// template's. The check of an op is then the check of
				// every op of its kind with or without a group: one
				// op of each is compared (likeReps).
				for _, i := range reps.of(t, ph, ops[1]) {
					if ok = ok && l.alike(s, ri, &ops[0][i], &ops[1][i]); !ok {
						break
					}
				}
				continue
			}
			for i := 0; ok && i < len(ops[1]); i++ {
				a, b := &ops[0][i], &ops[1][i]
				ok = opsAlike(a, b) && l.alike(s, ri, a, b)
			}
		}
		out[ri] = ok
	}
	return out
}

// linkCheck is linkAlike's memory within one pair of ranks: the peers and
// group whose paths and shape it has compared (a rank's sends go to one
// peer, its collectives to one group, mostly).
type linkCheck struct {
	send, recv [2]int      // the peers of ri−1 and ri compared, +1 (0: none)
	group      [2]groupKey // the groups compared
	lone       *loneMemo
	prev, cur  *rankState // ranks ri−1 and ri: an op's labels are read through them (speed.go: peer, group)
}

// likeReps is, for each template rank's Programs and phase, the first op
// of each kind with and without a group (stagesAlike compares those of
// two ranks made from the template), found once per template.
type likeReps struct {
	tmpl [2]int // +1 (0: none)
	reps [2][]int
}

// of is the representative ops' indices in ops, template t's ops of phase
// slot ph (0 prefill, 1 decode).
func (m *likeReps) of(t, ph int, ops []partition.Op) []int {
	if m.tmpl[ph] == t+1 {
		return m.reps[ph]
	}
	type class struct {
		kind  partition.Kind
		group bool
	}
	var seen []class
	m.reps[ph] = m.reps[ph][:0]
	for i := range ops {
		c := class{ops[i].Kind, ops[i].Group != nil}
		if !slices.Contains(seen, c) {
			seen = append(seen, c)
			m.reps[ph] = append(m.reps[ph], i)
		}
	}
	m.tmpl[ph] = t + 1
	return m.reps[ph]
}

// loneMemo is the last group loneShape was asked about, for one rank: rank
// ri's group is looked at as ri's, then as ri−1's when the next pair is
// compared.
type loneMemo struct {
	k  groupKey
	ri int
	sh collShape
	ok bool
}

// shape is s.loneShape(g, ri), remembered for the last group and rank.
func (m *loneMemo) shape(s *simulator, g []int, ri int) (collShape, bool) {
	k := groupKey{&g[0], len(g)}
	if m != nil && m.k == k && m.ri == ri {
		return m.sh, m.ok
	}
	sh, ok := s.loneShape(g, ri)
	if m != nil {
		*m = loneMemo{k, ri, sh, ok}
	}
	return sh, ok
}

// alike says whether op b of simulated rank ri takes the place of op a of
// rank ri−1 in the chain (see stagesAlike).
func (l *linkCheck) alike(s *simulator, ri int, a, b *partition.Op) bool {
	topo := &s.plan.System.Topology
	me, prev := s.ids[ri], s.ids[ri-1]
	// The ops' peers and groups as the ranks run them (a template's op
	// read with a rank's labels: speed.go).
	aPeer, bPeer, aGroup, bGroup := a.Peer, b.Peer, a.Group, b.Group
	if l.prev != nil {
		aPeer, aGroup = l.prev.peer(a), l.prev.group(a)
	}
	if l.cur != nil {
		bPeer, bGroup = l.cur.peer(b), l.cur.group(b)
	}
	switch b.Kind {
	case partition.Send:
		if s.index[aPeer] != ri || ri+1 >= len(s.ids) || s.index[bPeer] != ri+1 {
			return false
		}
		if l.send != [2]int{aPeer + 1, bPeer + 1} {
			if topo.Path(me, bPeer) != topo.Path(prev, aPeer) {
				return false
			}
			l.send = [2]int{aPeer + 1, bPeer + 1}
		}
		return true
	case partition.Recv:
		if ri < 2 || s.index[aPeer] != ri-2 || s.index[bPeer] != ri-1 {
			return false
		}
		if l.recv != [2]int{aPeer + 1, bPeer + 1} {
			if topo.Path(bPeer, me) != topo.Path(aPeer, prev) {
				return false
			}
			l.recv = [2]int{aPeer + 1, bPeer + 1}
		}
		return true
	case partition.AllReduce, partition.AllGather:
		if len(aGroup) == 0 || len(bGroup) == 0 {
			return false
		}
		k := [2]groupKey{{&aGroup[0], len(aGroup)}, {&bGroup[0], len(bGroup)}}
		if l.group == k {
			return true
		}
		sa, oka := l.lone.shape(s, aGroup, ri-1)
		sb, okb := l.lone.shape(s, bGroup, ri)
		if !oka || !okb || sa != sb || !sa.ok {
			return false
		}
		l.group = k
		return true
	}
	return aPeer == bPeer && len(aGroup) == 0 && len(bGroup) == 0
}

// loneShape is group g's shape (shapeOf) and whether simulated rank ri is
// its one simulated member: what the simulation's groupInfo would hold,
// without naming the group.
func (s *simulator) loneShape(g []int, ri int) (collShape, bool) {
	n := 0
	for _, m := range g {
		if m < 0 || m >= len(s.index) {
			return collShape{}, false
		}
		if i := s.index[m]; i >= 0 {
			if i != ri {
				return collShape{}, false
			}
			n++
		}
	}
	return shapeOf(&s.plan.System.Topology, g), n == 1
}

// opsAlike says whether two ops are priced alike: every field equal but
// the name, the layer, the peer and the group, which linkAlike compares
// (TestOpsAlikeComparesEveryField holds this list to partition.Op's
// fields).
func opsAlike(a, b *partition.Op) bool {
	return a.Kind == b.Kind && a.Tensor == b.Tensor && a.Microbatch == b.Microbatch && a.Chunk == b.Chunk &&
		a.In == b.In && a.Out == b.Out && a.Rows == b.Rows && a.N == b.N && a.K == b.K &&
		a.Seqs == b.Seqs && a.QLen == b.QLen && a.Past == b.Past && a.InWidth == b.InWidth && a.OutWidth == b.OutWidth &&
		a.Heads == b.Heads && a.KVHeads == b.KVHeads && a.HeadDim == b.HeadDim && a.MLP == b.MLP && a.Bias == b.Bias &&
		a.Eps == b.Eps && a.RopeTheta == b.RopeTheta && a.Bidirectional == b.Bidirectional &&
		a.Vocab == b.Vocab && a.VocabOffset == b.VocabOffset && a.VocabSize == b.VocabSize && a.VocabShards == b.VocabShards &&
		a.FLOPs == b.FLOPs && a.WeightBytes == b.WeightBytes && a.ActBytes == b.ActBytes &&
		a.KVReadBytes == b.KVReadBytes && a.KVWriteBytes == b.KVWriteBytes &&
		a.Elems == b.Elems && a.Bytes == b.Bytes && a.Payload == b.Payload
}

// segmentOf is where item pc of the rank's run order lies: segment −1 (the
// prefill) or k (decode step k), and its index t in it.
func (r *rankState) segmentOf(pc int) (seg, t int) {
	if pc < len(r.pre) {
		return -1, pc
	}
	if pc == r.pc && r.curSet {
		return r.curStep, r.curIndex
	}
	d := pc - len(r.pre)
	return d / len(r.dec), d % len(r.dec)
}

// segment is the ops of segment seg and where they start in the run order.
func (r *rankState) segment(seg int) ([]partition.Op, int) {
	if seg < 0 {
		return r.pre, 0
	}
	return r.dec, len(r.pre) + seg*len(r.dec)
}

// record keeps simulated rank ri's slice of item pc for the stages written
// from it, with the costs it added (see stageRec).
func (w *stageWriter) record(s *simulator, ri, pc int, sl *Slice, c0, c1, c2 float64) {
	if w == nil || ri+1 >= len(w.alike) || !w.alike[ri+1] {
		return
	}
	seg, t := s.ranks[ri].segmentOf(pc)
	k := ri % stageRecs
	if t == 0 {
		w.recRank[k], w.recSeg[k], w.recN[k], w.recvs[k] = ri, seg, 0, 0
	}
	if w.recRank[k] != ri || w.recSeg[k] != seg || w.recN[k] != t {
		w.recRank[k] = -1 // not a whole segment in order
		return
	}
	rk := recKindOf(sl.Op.Kind)
	w.rec[k][t] = stageRec{*sl, [3]float64{c0, c1, c2}, -1, rk}
	w.recN[k]++
	if rk == recRecv {
		w.recvs[k]++
	}
}

// write writes simulated rank ri's next segment where it can (see the top
// of this file) and says whether it did. The sweep of the ranks calls it
// for every rank in order, so the rank after one written is always asked
// next: it takes the messages left pending, or they are queued.
func (w *stageWriter) write(s *simulator, ri int) bool {
	if w.try(s, ri) {
		return true
	}
	w.flush(s)
	w.last = -1
	return false
}

// flush queues the messages of the last rank written on their channel.
func (w *stageWriter) flush(s *simulator) {
	if len(w.pend) > 0 {
		s.inbox[w.pendKey] = append(s.inbox[w.pendKey], w.pend...)
		w.pend = w.pend[:0]
	}
}

// sending is called before the simulation sends on channel key: where
// the last rank written left messages pending on it (it goes on past its
// written segment), they are queued first, in the order they were sent.
func (w *stageWriter) sending(s *simulator, key chanKey) {
	if w != nil && len(w.pend) > 0 && key == w.pendKey {
		w.flush(s)
	}
}

func (w *stageWriter) try(s *simulator, ri int) bool {
	r := s.ranks[ri]
	if !w.alike[ri] || r.arrived || r.stop > 0 || r.pc >= r.count() {
		return false
	}
	seg, t := r.segmentOf(r.pc)
	ops, start := r.segment(seg)
	n := len(ops)
	if t != 0 || n == 0 || start+n > r.count() {
		return false
	}
	if w.last != ri-1 || w.seg != seg { // a new write: from rank ri−1, simulated
		k := (ri - 1) % stageRecs
		if w.recRank[k] != ri-1 || w.recSeg[k] != seg || w.recN[k] != n {
			return false
		}
		w.flush(s)
		w.j, w.seg = ri-1, seg
	}
	// The messages on the channel from rank ri−1, then those it sent in
	// its written segment (pending): one for each recv, else the stage
	// would wait in the middle of its segment.
	in := chanKey{s.ids[ri-1], s.ids[ri]}
	q := s.inbox[in]
	if w.recvs[w.j%stageRecs] > len(q)+len(w.pend) {
		return false
	}
	if !(s.ends == nil && s.base != nil) && !(s.ends != nil && s.uses == nil) {
		// Neither packed nor headline (place): its slices point at its
		// ops, which must be its own.
		s.own(ri)
		ops, _ = r.segment(seg)
	}
	w.place(s, ri, seg, ops, start, q)
	w.last = ri
	w.written++
	return true
}

// place writes rank ri's segment seg (ops, from item start) from the
// template's records with the simulation's arithmetic (step, collective):
// each slice where the simulation places it (emit, recordUse), recvs'
// messages taken from q (the channel from rank ri−1) then from the pending
// ones, sends' flows numbered in op order and their messages left pending
// for the next rank, the rank's clock and channel and the steady state's
// records left as the simulation leaves them.
func (w *stageWriter) place(s *simulator, ri, seg int, ops []partition.Op, start int, q []message) {
	r := s.ranks[ri]
	tmpl := w.rec[w.j%stageRecs][:len(ops)]
	me := s.ids[ri]
	direct := s.ends == nil && s.base != nil // the whole estimate: slices packed in place
	// A headline run (the range ends) keeps the samples' ends and, for the
	// steady state's check, the decode ops' times (emit: sampleEnds.add and
	// steady.keep), and nothing per op else: no slice is made.
	headline := s.ends != nil && s.uses == nil
	var out chanKey
	var free float64
	sent, taken := false, 0
	clock := r.clock
	var local Slice
	for t := range ops {
		T := &tmpl[t]
		sl := &local
		switch {
		case direct: // times and flow of its own, the template's attributes
			if T.attr < 0 {
				T.attr = s.pk.intern(attrOf(&T.sl))
			}
			sl.StartS, sl.WaitS, sl.Flow = clock, T.sl.WaitS, T.sl.Flow
		case headline:
			sl.StartS, sl.WaitS = clock, T.sl.WaitS
		default:
			*sl = T.sl
			sl.Rank, sl.Op, sl.StartS = me, &ops[t], clock
		}
		switch T.kind { // the op's: the ops are alike (stagesAlike)
		case recSend:
			if !sent {
				out = chanKey{me, r.peer(&ops[t])} // speed.go: the rank's labels where ops are its template's
				free, sent = s.chanFree[out], true
			}
			sl.EndS = clock + T.c[0]
			dep := max(sl.EndS, free)
			free = dep + T.c[1]
			sl.EndS += T.c[2]
			s.flows++
			sl.Flow = s.flows
			w.next = append(w.next, message{free, s.flows})
			if seg >= 0 {
				s.steady.arrival(ri, item{phase: partition.Decode, step: seg, index: t}, free)
			}
		case recRecv:
			var m message
			if taken < len(q) {
				m = q[taken]
			} else {
				m = w.pend[taken-len(q)]
			}
			taken++
			sl.Flow = m.flow
			sl.EndS = max(clock, m.arrival) // recvWaitS is 0 without an op-time table
			sl.WaitS = sl.EndS - clock
		case recCollective: // one member: it starts at its own arrival
			at := max(0.0, clock)
			sl.EndS = at + T.c[0] + T.c[1] // coreWaitS is 0 without an op-time table
			sl.WaitS = at - clock
		default:
			sl.EndS = clock + T.c[0]
		}
		clock = sl.EndS
		if direct {
			*s.slot(ri, start+t) = sliceTimes{sl.StartS, sl.EndS, sl.WaitS, sl.Flow, T.attr}
			continue // recordUse keeps nothing without ends
		}
		if headline {
			if T.kind == recSample {
				if seg < 0 {
					s.ends.ttft = max(s.ends.ttft, sl.EndS)
				} else {
					mb := ops[t].Microbatch
					s.ends.tok[seg][mb] = max(s.ends.tok[seg][mb], sl.EndS)
				}
			}
			if st := s.steady; seg >= 0 && st != nil && st.recent[0] != nil {
				st.recent[seg%3][st.decBase[ri]+t] = stepOpTimes{sl.StartS, sl.EndS, sl.WaitS}
			}
			continue
		}
		s.emit(ri, start+t, sl)
		s.recordUse(ri, start+t, sl)
	}
	// The channel keeps the messages not taken, then the pending ones not
	// taken; this rank's sends are pending now.
	if fromQ := min(taken, len(q)); fromQ > 0 || len(w.pend) > taken-fromQ {
		q = q[fromQ:]
		if rest := taken - fromQ; rest < len(w.pend) {
			q = append(q, w.pend[rest:]...)
		}
		s.inbox[chanKey{s.ids[ri-1], me}] = q
	}
	w.pend, w.next = w.next, w.pend[:0]
	if sent {
		w.pendKey = out
		s.chanFree[out] = free
	}
	r.clock = clock
	// The compute runs since the last communication op are read only with
	// an op-time table or shared cores, which newStageWriter refuses.
	r.burstS, r.burstAloneS, r.burstOverS, r.burstActS, r.turnS = 0, 0, 0, 0, 0
	r.pc = start + len(ops)
	if r.pc >= len(r.pre) && len(r.dec) > 0 {
		r.curStep, r.curIndex, r.curSet = seg+1, 0, true
	}
}
