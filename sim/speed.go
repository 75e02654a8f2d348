package sim

import (
	"math"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// This file holds what keeps an estimate's cost near the number of distinct
// things it prices: what the runs of one estimate share (planWork), a memo
// of collective costs per group shape, each decode op priced once per rank,
// a rank's run order read from its Programs as it advances, slices placed
// where they end and the range ends keeping only the sample ops' ends, the
// timeline's final ordering without moving every slice through a reflective
// sort, and a finiteness check that reads rows by field offset and builds
// field paths only when it has something to report.

// planWork holds what the three timeline runs of one EstimatePlan
// (nominal, and both ends of the GPU's ranges) share: the ranks'
// Programs, the communication summaries, first-touch marks, group names and
// whether stage links are alike, which depend on the plan's shapes and
// links, never on the GPU's speeds. A nil planWork computes everything
// afresh.
type planWork struct {
	programs [2]map[int]progEntry          // by phaseSlot, then rank
	like     map[likeKey]partition.Program // each kind's first Program built (program)
	slabs    map[likeKey][]partition.Op    // where a kind's next Programs made alike are carved
	forms    map[likeKey]bool              // whether a kind's template is of ProgramLike's form (likeForm)
	reps     *stageReps                    // each stage's first rank's Programs as the runs read them
	comms    map[partition.Phase]partition.CommSummary
	firsts   map[int][]bool // a simulated rank's first touches (markFirstTouch)
	alike    *bool          // stageLinksAlike: of the links, not the GPU's speeds
	names    map[groupKey]string
	timeline *timelineMemo // timeline_stages.go: what the timeline checks of the Programs alone
	ws       map[int]int64 // a kind's first rank's working set (workingSetIn)
	// index is the simulator's rank index (simIndex) for indexKinds kinds.
	index      []int
	indexKinds int
}

// simIndex is the simulator's index of plan ranks 0…n−1 for the kinds'
// first ranks (simulated rank i is kinds[i].Rank, −1 for the others),
// made once for the runs of a plan, which simulate the same ranks and only
// read it.
func (w *planWork) simIndex(n int, kinds []RankKind) []int {
	if w != nil && len(w.index) == n && w.indexKinds == len(kinds) {
		same := true
		for i := range kinds {
			if w.index[kinds[i].Rank] != i {
				same = false
				break
			}
		}
		if same {
			return w.index
		}
	}
	index := make([]int, n)
	for r := range index {
		index[r] = -1
	}
	for i := range kinds {
		index[kinds[i].Rank] = i
	}
	if w != nil {
		w.index, w.indexKinds = index, len(kinds)
	}
	return index
}

// workingSet is workingSetIn of rank r's decode Program d, computed once
// for the runs of a plan: it reads the Program alone.
func (w *planWork) workingSet(r int, d partition.Program, seen map[tensorKey]bool) int64 {
	if w == nil {
		return workingSetIn(d, seen)
	}
	if ws, ok := w.ws[r]; ok {
		return ws
	}
	if w.ws == nil {
		w.ws = map[int]int64{}
	}
	// A Program made alike from another's (templateOf) reads the same
	// tensors of layers mapped one to one: the same working set.
	if t := w.templateOf(r); t >= 0 && t != r {
		if ws, ok := w.ws[t]; ok {
			w.ws[r] = ws
			return ws
		}
	}
	ws := workingSetIn(d, seen)
	w.ws[r] = ws
	return ws
}

// groupName is the name of the group g, the shared slice of its Programs
// that k keys, built once for the runs of a plan.
func (w *planWork) groupName(k groupKey, g []int) string {
	if w == nil {
		return groupName(g)
	}
	if n, ok := w.names[k]; ok {
		return n
	}
	if w.names == nil {
		w.names = map[groupKey]string{}
	}
	n := groupName(g)
	w.names[k] = n
	return n
}

func (w *planWork) linksAlike(plan *partition.Plan) bool {
	if w == nil {
		return stageLinksAlike(plan)
	}
	if w.alike == nil {
		a := stageLinksAlike(plan)
		w.alike = &a
	}
	return *w.alike
}

// progEntry is a rank's Program of one phase and the rank it was made
// alike from (partition.ProgramLike; itself for a kind's template, −1: built
// and no template). A lazy entry is made alike and not made yet: p.Ops is
// the template's ops, whose labels (names, layers, peers, groups) are the
// template's, and program makes the rank's own on first need.
type progEntry struct {
	p    partition.Program
	tmpl int
	lazy bool
}

// phaseSlot is where planWork keeps a phase's Programs.
func phaseSlot(phase partition.Phase) int {
	if phase == partition.Prefill {
		return 0
	}
	return 1
}

// program is rank's Program of phase, made on first need and kept.
func (w *planWork) program(plan *partition.Plan, rank int, phase partition.Phase) partition.Program {
	if w == nil {
		return plan.Program(rank, phase)
	}
	e := w.entry(plan, rank, phase)
	if !e.lazy {
		return e.p
	}
	// Made alike from its kind's template (partition.ProgramLike), in
	// an array carved for the kind's next Programs.
	rk := plan.RankAt(rank)
	lk := likeKey{plan.StageKindOf(rk.Stage), rk.TPIndex, phase}
	t := w.like[lk]
	n := len(t.Ops)
	slab := w.slabs[lk]
	if len(slab) < n { // room for the stages after this one, at most slabPrograms
		slab = make([]partition.Op, min(slabPrograms, max(1, plan.PP-1-rk.Stage))*n)
	}
	p, ok := plan.ProgramLikeIn(t, rank, slab)
	if ok {
		slab = slab[n:]
	} else { // not reached: entry checked partition.Plan.ProgramLikeOK
		p = plan.Program(rank, phase)
	}
	if w.slabs == nil {
		w.slabs = map[likeKey][]partition.Op{}
	}
	w.slabs[lk] = slab
	e.p, e.lazy = p, false
	w.programs[phaseSlot(phase)][rank] = e
	return p
}

// view is rank's Program of phase as a timeline run first reads it, and
// whether it is lazy: then its ops are its template's (progEntry), read
// with the rank's labels (partition.LikeLabels), tmpl is the template's
// Program, and program makes the rank's own where a reader needs its names
// or layers.
func (w *planWork) view(plan *partition.Plan, rank int, phase partition.Phase) (p, tmpl partition.Program, lazy bool) {
	if w == nil {
		return plan.Program(rank, phase), partition.Program{}, false
	}
	e := w.entry(plan, rank, phase)
	if e.lazy {
		tmpl = partition.Program{Rank: e.tmpl, Phase: phase, Ops: e.p.Ops}
	}
	return e.p, tmpl, e.lazy
}

// entry is rank's entry of phase, made where there is none: a middle
// stage's Programs are its kind's first one's with their own labels
// (partition.ProgramLike), so the builder runs once per kind, and a
// Program made alike is lazy until program is asked for it.
func (w *planWork) entry(plan *partition.Plan, rank int, phase partition.Phase) progEntry {
	progs := &w.programs[phaseSlot(phase)]
	if e, ok := (*progs)[rank]; ok {
		return e
	}
	if *progs == nil {
		*progs = make(map[int]progEntry, plan.PP) // a stage's first rank at least
	}
	rk := plan.RankAt(rank)
	lk := likeKey{plan.StageKindOf(rk.Stage), rk.TPIndex, phase}
	e := progEntry{tmpl: -1}
	t, seen := w.like[lk]
	if seen && plan.LikeRanks(t.Rank, rank) && w.likeForm(plan, lk, t) {
		e = progEntry{p: partition.Program{Rank: rank, Phase: phase, Ops: t.Ops}, tmpl: t.Rank, lazy: true}
	} else {
		if phase == partition.Prefill {
			e.p = prefillProgram(plan, rank) // timeline_chunks.go: middle chunks copied
		} else {
			e.p = plan.Program(rank, phase)
		}
		if w.like == nil {
			w.like = map[likeKey]partition.Program{}
		}
		if !seen {
			w.like[lk] = e.p
			e.tmpl = rank
		}
	}
	(*progs)[rank] = e
	return e
}

// stageReps is each stage's TP index 0 rank's Programs as view gives them
// (lazy: both phases lazy, like: then their templates), the same for every
// run of a plan: the Programs depend on its shapes alone.
type stageReps struct {
	pre, dec []partition.Program
	lazy     []bool
	like     []likeRank
	kept     bool // filled by an earlier run (keepReps)
}

// stageReps is the plan's stageReps for pp stages where an earlier run
// kept them, else new ones to fill.
func (w *planWork) stageReps(pp int) *stageReps {
	if w != nil && w.reps != nil && len(w.reps.pre) == pp {
		return w.reps
	}
	return &stageReps{pre: make([]partition.Program, pp), dec: make([]partition.Program, pp), lazy: make([]bool, pp), like: make([]likeRank, pp)}
}

// keepReps keeps r, filled, for the plan's later runs.
func (w *planWork) keepReps(r *stageReps) {
	if w != nil {
		r.kept = true
		w.reps = r
	}
}

// ownUnlessBoth is a rank's Programs of both phases as view gave them
// where both are lazy (then like holds the templates), else each made: a
// simulated rank reads both phases' ops with one set of labels (likeRank)
// or none.
func ownUnlessBoth(plan *partition.Plan, w *planWork, p, d partition.Program, like likeRank, lp, ld bool) (partition.Program, partition.Program, likeRank, bool) {
	if lp && ld {
		return p, d, like, true
	}
	if lp {
		p = w.program(plan, p.Rank, p.Phase)
	}
	if ld {
		d = w.program(plan, d.Rank, d.Phase)
	}
	return p, d, likeRank{}, false
}

// likeRank is what a simulated rank whose Programs are lazy (planWork.view)
// reads beside its template's ops: its labels, and the templates its own
// Programs are made from (partition.ProgramLike) where they are needed.
type likeRank struct {
	partition.LikeLabels
	pre, dec partition.Program
}

// peer is op's peer as rank r runs it: op is r's own, or its template's
// read with r's labels.
func (r *rankState) peer(op *partition.Op) int {
	if r.like != nil {
		return r.like.Peer(op)
	}
	return op.Peer
}

// group is op's group as rank r runs it (peer).
func (r *rankState) group(op *partition.Op) []int {
	if r.like != nil {
		return r.like.GroupOf(op)
	}
	return op.Group
}

// own gives simulated rank ri its own Programs where it reads its
// template's (likeRank): before it is simulated, or a reader needs its
// ops' names or layers.
func (s *simulator) own(ri int) {
	r := s.ranks[ri]
	if r.like == nil {
		return
	}
	id := s.ids[ri]
	r.pre, r.dec = s.work.program(s.plan, id, partition.Prefill).Ops, s.work.program(s.plan, id, partition.Decode).Ops
	r.like = nil
	if pk := s.pk; pk != nil && pk.like != nil && pk.like[ri] != nil { // its slices point at these (timeline_packed.go)
		pk.own[ri] = [2][]partition.Op{r.pre, r.dec}
		pk.like[ri] = nil
	}
}

// likeForm is partition.Plan.LikeForm of kind lk's template t, once.
func (w *planWork) likeForm(plan *partition.Plan, lk likeKey, t partition.Program) bool {
	if f, ok := w.forms[lk]; ok {
		return f
	}
	if w.forms == nil {
		w.forms = map[likeKey]bool{}
	}
	f := plan.LikeForm(t)
	w.forms[lk] = f
	return f
}

// templateOf is the rank whose Programs rank's were made from by
// partition.ProgramLike, both phases from the same one (rank itself where
// they are the template), or −1: then rank's Programs run the same ops as
// the template's but for their names, layers, peers and groups, and the
// layers map one to one.
func (w *planWork) templateOf(rank int) int {
	if w == nil {
		return -1
	}
	p, okp := w.programs[0][rank]
	d, okd := w.programs[1][rank]
	if !okp || !okd || p.tmpl != d.tmpl {
		return -1
	}
	return p.tmpl
}

// slabPrograms is how many Programs made alike planWork carves from one
// array at most (one allocation, not one a stage; sized by the stages left
// after the one that needs it, so a short pipeline allocates no more than
// it uses).
const slabPrograms = 64

// likeKey is what a Program is made alike from (partition.ProgramLike): its
// stage's kind, its TP index and its phase.
type likeKey struct {
	kind  partition.StageKind
	tp    int
	phase partition.Phase
}

func (w *planWork) comm(plan *partition.Plan, phase partition.Phase) partition.CommSummary {
	if w == nil {
		return plan.Comm(phase)
	}
	if c, ok := w.comms[phase]; ok {
		return c
	}
	if w.comms == nil {
		w.comms = map[partition.Phase]partition.CommSummary{}
	}
	c := plan.CommOf(phase, func(rank int, phase partition.Phase) partition.Program { return w.program(plan, rank, phase) })
	w.comms[phase] = c
	return c
}

// collShape is what Collective reads of a group of distinct ranks in
// range: its size and how its ranks fall on nodes (analyze: the nodes it
// spans, the fewest and most ranks on one). ok is false for a group that is
// not strictly ascending and in range, which is never memoised.
type collShape struct {
	n, nodes, minPer, maxPer int
	ok                       bool
}

// shapeOf is the collShape of ranks on t.
func shapeOf(t *topology.Topology, ranks []int) collShape {
	sh := collShape{n: len(ranks), minPer: math.MaxInt, ok: len(ranks) > 0}
	size := t.Size()
	run := 0 // ranks on the current node so far
	for i, r := range ranks {
		if r < 0 || r >= size || i > 0 && r <= ranks[i-1] {
			return collShape{}
		}
		if i > 0 && t.NodeOf(r) == t.NodeOf(ranks[i-1]) {
			run++
			continue
		}
		if i > 0 { // ascending: a node's ranks are consecutive in the list
			sh.minPer, sh.maxPer = min(sh.minPer, run), max(sh.maxPer, run)
		}
		sh.nodes, run = sh.nodes+1, 1
	}
	if sh.ok {
		sh.minPer, sh.maxPer = min(sh.minPer, run), max(sh.maxPer, run)
	}
	return sh
}

// collMemoKey is one collective shape of the simulation.
type collMemoKey struct {
	shape collShape
	g     *groupInfo // nil where the shape stands for every group of it
	op    commcount.Op
	bytes int64
}

// collectiveMemo is Collective for op on group gi, computed once per
// (group shape, op, bytes) in a simulation: the system and options do not
// change within one, and Collective reads nothing of a valid group but its
// shape (collShape). Errors are not memoised, so each names its own group.
func (s *simulator) collectiveMemo(gi *groupInfo, cop commcount.Op, op *partition.Op) (CollectiveEstimate, error) {
	k := collMemoKey{shape: gi.shape, op: cop, bytes: op.Bytes}
	if !gi.shape.ok {
		k.g = gi
	}
	if est, ok := s.collMemo[k]; ok {
		return est, nil
	}
	est, err := programCollective(s.plan.System, cop, op.Group, op.Bytes, s.opts.Collectives)
	if err != nil {
		return est, err
	}
	if s.collMemo == nil {
		s.collMemo = map[collMemoKey]CollectiveEstimate{}
	}
	s.collMemo[k] = est
	return est, nil
}

// sampleEnds is what an estimate's headline numbers are read from: the
// end of the last prefill sample (TTFT) and of each decode step's sample
// per micro-batch (a token is out when its sample ends on every TP rank of
// the last stage).
type sampleEnds struct {
	ttft float64
	tok  [][]float64 // [decode step][micro-batch]
}

func newSampleEnds(steps, microbatches int) *sampleEnds {
	e := &sampleEnds{tok: make([][]float64, steps)}
	for i := range e.tok {
		e.tok[i] = make([]float64, microbatches)
	}
	return e
}

func (e *sampleEnds) add(sl *Slice) {
	if sl.Op.Kind != partition.Sample {
		return
	}
	if sl.Phase == partition.Prefill {
		e.ttft = max(e.ttft, sl.EndS)
	} else {
		e.tok[sl.Step][sl.Op.Microbatch] = max(e.tok[sl.Step][sl.Op.Microbatch], sl.EndS)
	}
}

// emit hands simulated rank ri's slice of item pc to the timeline, or with
// ends set only its end to the headline numbers. Presized (base set), the
// slices lie rank by rank in item order, as the final ordering wants them.
func (s *simulator) emit(ri, pc int, sl *Slice) {
	switch {
	case s.ends != nil:
		s.ends.add(sl)
		s.steady.keep(ri, pc, s.ranks[ri], sl)
	case s.base != nil:
		s.pk.put(s.base[ri]+pc, sl)
	default:
		s.out = append(s.out, *sl)
	}
}

// presizeSlices gives the timeline's output one slot per simulated op
// (packed: timeline_packed.go), in rank order (simulator indices follow plan ranks) and each rank's item
// order: one slice per item, placed as it ends (emit), so the output is
// neither regrown nor, in the common case, moved by the final ordering. A
// rank's slices start where its clock stands, which never goes back, so
// item order is start order (sortSlices checks, and sorts if not).
func presizeSlices(s *simulator) {
	s.base, _ = itemBases(s)
	s.pk = newPackedSlices(s) // timeline_packed.go
}

// itemBases is where each simulated rank's items begin in one array of
// every rank's items, rank by rank, and how many items there are in all.
func itemBases(s *simulator) ([]int, int) {
	base := make([]int, len(s.ranks))
	n := 0
	for i, r := range s.ranks {
		base[i] = n
		n += r.count()
	}
	return base, n
}

// opMemo is what step computes of an op before placing it in time: a
// compute op's cost; a send's transfer time (TimeS) and link class; a
// recv's link class.
type opMemo struct {
	ok   bool
	cost OpCost
	link topology.LinkClass
	// asleep is a send's call time to a sleeping receiver, where hasAsleep
	// (cost.FixedS: to an awake one; timeline.go picks by the receiver's
	// wait, sendCallAtS).
	asleep    float64
	hasAsleep bool
}

// memoOf is where step keeps what it prices of item it. Every decode step
// runs the same decode Program, and an op's price is a function of the op,
// the rank, the phase and whether it touches its tensor first, never of
// time: so a decode op that is not a first touch is priced once per rank
// and read back in every later step, to the bit. Other items get an
// empty scratch entry (priced each time).
func (r *rankState) memoOf(it item) *opMemo {
	if it.phase == partition.Decode && !it.first && it.index < r.memoN {
		if r.memo == nil { // made where a decode op is priced: a stage written (timeline_stages.go) prices none
			r.memo = make([]opMemo, r.memoN)
		}
		return &r.memo[it.index]
	}
	r.scratch = opMemo{}
	return &r.scratch
}

// at is item pc of the rank's run order: the prefill Program's ops, then
// steps decode steps of the decode Program's, built as asked for rather
// than held (a rank of a long timeline has many), or items[pc] where a
// list was given.
func (r *rankState) at(pc int) item {
	if r.items != nil {
		return r.items[pc]
	}
	it := item{phase: partition.Prefill, step: -1, index: pc}
	if pc >= len(r.pre) {
		it.phase = partition.Decode
		if pc == r.pc && r.curSet { // kept by advance: no division
			it.step, it.index = r.curStep, r.curIndex
		} else {
			d := len(r.dec)
			it.step, it.index = (pc-len(r.pre))/d, (pc-len(r.pre))%d
		}
		it.op = &r.dec[it.index]
	} else {
		it.op = &r.pre[pc]
	}
	it.first = pc < len(r.first) && r.first[pc]
	return it
}

// advance moves the rank to its next item, keeping a decode item's step
// and index at hand (cur…) so at need not divide on every look.
func (r *rankState) advance() {
	r.pc++
	switch {
	case r.pc < len(r.pre) || r.items != nil:
	case r.pc == len(r.pre):
		r.curStep, r.curIndex, r.curSet = 0, 0, true
	case r.curIndex+1 < len(r.dec):
		r.curIndex++
	default:
		r.curStep, r.curIndex = r.curStep+1, 0
	}
}

// count is the length of the rank's run order.
func (r *rankState) count() int {
	if r.stop > 0 { // held at a prefill chunk (timeline_chunks.go)
		return r.stop
	}
	if r.items != nil {
		return len(r.items)
	}
	return len(r.pre) + r.steps*len(r.dec)
}

// markFirstTouch sets r.first: whether each of the prefill's and the first
// decode step's ops is the rank's first op on its (layer, tensor), which
// prices a weight read from HBM rather than L2 (computeCost). Later decode
// steps repeat the first's ops, so nothing in them is first. They depend
// on the rank's Programs alone, so w (nil: none) keeps them for the other
// runs of the same plan.
func markFirstTouch(r *rankState, w *planWork, rank int) {
	if w != nil {
		if f, ok := w.firsts[rank]; ok {
			r.first = f
			return
		}
		// A rank's Programs made alike from another's touch their layers
		// in the same pattern (the layers map one to one, the tensors are
		// the same): the same first touches.
		if t := w.templateOf(rank); t >= 0 && t != rank && r.items == nil {
			if f, ok := w.firsts[t]; ok && len(f) == len(r.pre)+min(r.steps, 1)*len(r.dec) {
				r.first = f
				w.firsts[rank] = f
				return
			}
		}
	}
	var seen touched
	n := len(r.pre) + min(r.steps, 1)*len(r.dec)
	r.first = make([]bool, n)
	op := func(pc int) *partition.Op { // r.at(pc).op without the item
		if r.items != nil {
			return r.items[pc].op
		}
		if pc < len(r.pre) {
			return &r.pre[pc]
		}
		return &r.dec[pc-len(r.pre)]
	}
	d := passLen(r.pre)
	for pc := range n {
		o := op(pc)
		if d > 0 && pc >= d {
			// An op on the key of the op one pass before is no first
			// touch: a chunked prefill's later passes repeat the first's
			// keys, and a comparison costs less than the set's scan.
			if p := op(pc - d); p.Layer == o.Layer && p.Tensor == o.Tensor {
				continue
			}
		}
		r.first[pc] = seen.add(o.Layer, o.Tensor)
	}
	if w != nil {
		if w.firsts == nil {
			w.firsts = map[int][]bool{}
		}
		w.firsts[rank] = r.first
	}
}

// passLen is the length of the prefill's first pass: the index of the
// first op of another micro-batch or chunk than the first op's (0: one
// pass). markFirstTouch compares each op with the op this far before it;
// any distance is correct there, this one makes the comparison hit.
func passLen(pre []partition.Op) int {
	for i := range pre {
		if pre[i].Microbatch != pre[0].Microbatch || pre[i].Chunk != pre[0].Chunk {
			return i
		}
	}
	return 0
}

// touched is a set of (layer, tensor) keys: per layer, the few tensor
// names a rank's ops touch in it, found by a scan (no hash of the name per
// op, which a prefill of many chunks looks up for every op). Layers are
// counted from the first non-negative one added (a rank holds a run of
// layers, so a rank of layer 999 keeps one list, not 1,000); layer −1 has
// its own list, and a layer below the first or far above it goes to a map.
type touched struct {
	lo      int
	byLayer [][]string // layer − lo → names
	outside []string   // layer −1
	other   map[tensorKey]bool
}

// add puts (layer, tensor) in the set and says whether it was new.
func (t *touched) add(layer int, tensor string) bool {
	var list *[]string
	switch {
	case layer == -1:
		list = &t.outside
	case layer >= 0 && t.byLayer == nil:
		t.lo, t.byLayer = layer, make([][]string, 1, 8)
		list = &t.byLayer[0]
	case layer >= t.lo && layer-t.lo < 1<<16:
		i := layer - t.lo
		for i >= len(t.byLayer) {
			t.byLayer = append(t.byLayer, nil)
		}
		list = &t.byLayer[i]
	default:
		if t.other == nil {
			t.other = map[tensorKey]bool{}
		}
		k := tensorKey{layer, tensor}
		if t.other[k] {
			return false
		}
		t.other[k] = true
		return true
	}
	for _, name := range *list {
		if name == tensor {
			return false
		}
	}
	*list = append(*list, tensor)
	return true
}

// sortSlices orders a timeline's slices by rank, then start time, keeping
// the order of equal ones: the result of a stable sort, reached by sorting
// indices and moving each slice once.
func sortSlices(out []Slice) {
	less := func(a, b *Slice) bool {
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		return a.StartS < b.StartS
	}
	sorted := true
	for i := 1; i < len(out) && sorted; i++ {
		sorted = !less(&out[i], &out[i-1])
	}
	if sorted {
		return
	}
	// Counting sort by rank (stable), then a stable sort by start time
	// within each rank where its slices are not already in order.
	lo, hi := out[0].Rank, out[0].Rank
	for i := range out {
		lo, hi = min(lo, out[i].Rank), max(hi, out[i].Rank)
	}
	start := make([]int, hi-lo+2)
	for i := range out {
		start[out[i].Rank-lo+1]++
	}
	for r := 1; r < len(start); r++ {
		start[r] += start[r-1]
	}
	idx := make([]int, len(out))
	next := slices.Clone(start)
	for i := range out {
		b := out[i].Rank - lo
		idx[next[b]] = i
		next[b]++
	}
	byStart := func(a, b int) int {
		switch {
		case out[a].StartS < out[b].StartS:
			return -1
		case out[b].StartS < out[a].StartS:
			return 1
		}
		return 0
	}
	for r := 0; r+1 < len(start); r++ {
		if bucket := idx[start[r]:start[r+1]]; !slices.IsSortedFunc(bucket, byStart) {
			slices.SortStableFunc(bucket, byStart)
		}
	}
	// out[i] becomes the old out[idx[i]].
	permuteInPlace(out, idx)
}

// finiteFields lists, per struct type, the fields walkFinite visits (the
// exported ones not tagged json:"-").
var finiteFields sync.Map // reflect.Type → []int

func fieldsToWalk(t reflect.Type) []int {
	if f, ok := finiteFields.Load(t); ok {
		return f.([]int)
	}
	var out []int
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if name, _, _ := cutComma(f.Tag.Get("json")); name == "-" {
			continue
		}
		out = append(out, i)
	}
	finiteFields.Store(t, out)
	return out
}

func cutComma(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// allFinite is walkFinite's walk without paths: whether every float
// reachable from v (as walkFinite goes) is finite.
func allFinite(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return f-f == 0 // false for NaN and ±Inf
	case reflect.Pointer, reflect.Interface:
		return v.IsNil() || allFinite(v.Elem())
	case reflect.Struct:
		for _, i := range fieldsToWalk(v.Type()) {
			if !allFinite(v.Field(i)) {
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		if !hasFloats(v.Type().Elem()) {
			return true
		}
		if v.Kind() == reflect.Slice && v.Len() > 0 {
			if offs, ok := flatFloats(v.Type().Elem()); ok { // e.g. an estimate's per-rank rows
				size := v.Type().Elem().Size()
				base := v.UnsafePointer()
				for i := 0; i < v.Len(); i++ {
					row := unsafe.Add(base, uintptr(i)*size)
					for _, off := range offs {
						if f := *(*float64)(unsafe.Add(row, off)); f-f != 0 {
							return false
						}
					}
				}
				return true
			}
		}
		for i := 0; i < v.Len(); i++ {
			if !allFinite(v.Index(i)) {
				return false
			}
		}
	case reflect.Map:
		if !hasFloats(v.Type().Elem()) {
			return true
		}
		it := v.MapRange()
		for it.Next() {
			if !allFinite(it.Value()) {
				return false
			}
		}
	}
	return true
}

// flatFloat is a struct type's float64 fields as allFinite visits them,
// by offset, where all of them lie in the struct itself.
type flatFloat struct {
	offs []uintptr
	ok   bool
}

var flatFloatTypes sync.Map // reflect.Type → flatFloat

// flatFloats lists the offsets of the float64 fields allFinite would visit
// in a value of struct type t (exported, not json:"-", through nested and
// embedded structs), when every float it could visit lies at a fixed offset:
// none is a float32 or behind a pointer, slice, map, array or interface
// (ok false otherwise, and the walk stays reflective).
func flatFloats(t reflect.Type) ([]uintptr, bool) {
	if f, ok := flatFloatTypes.Load(t); ok {
		ff := f.(flatFloat)
		return ff.offs, ff.ok
	}
	var offs []uintptr
	ok := t.Kind() == reflect.Struct && addFlatFloats(t, 0, &offs)
	flatFloatTypes.Store(t, flatFloat{offs, ok})
	return offs, ok
}

func addFlatFloats(t reflect.Type, base uintptr, offs *[]uintptr) bool {
	for _, i := range fieldsToWalk(t) {
		f := t.Field(i)
		switch f.Type.Kind() {
		case reflect.Float64:
			*offs = append(*offs, base+f.Offset)
		case reflect.Struct:
			if !addFlatFloats(f.Type, base+f.Offset, offs) {
				return false
			}
		default:
			if hasFloats(f.Type) {
				return false
			}
		}
	}
	return true
}

var floatTypes sync.Map // reflect.Type → bool

// hasFloats says whether a value of type t can hold a float walkFinite
// would visit (interfaces: maybe).
func hasFloats(t reflect.Type) bool {
	if b, ok := floatTypes.Load(t); ok {
		return b.(bool)
	}
	floatTypes.Store(t, true) // a recursive type is assumed to hold floats
	var b bool
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Interface:
		b = true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		b = hasFloats(t.Elem())
	case reflect.Struct:
		for _, i := range fieldsToWalk(t) {
			if hasFloats(t.Field(i).Type) {
				b = true
				break
			}
		}
	}
	floatTypes.Store(t, b)
	return b
}
