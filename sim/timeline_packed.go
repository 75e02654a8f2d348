package sim

import (
	"iter"
	"sort"
	"sync"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// A simulated timeline's slices packed: an estimate's timeline holds a slice
// for every op of every simulated rank (238,000 on the 100,000-GPU dry run,
// most of them written from a template stage or extrapolated decode steps),
// and a Slice holds pointers (its op, its strings), so the collector scans
// every one. Packed, a slice is what it has of its own — its start, end,
// wait and flow — and an index into the timeline's few distinct bounds,
// algorithms, protocols, links and byte counts (sliceAttr); its rank, phase,
// step and op follow from where it lies (simulated rank ri's item pc: the
// prefill Program's ops, then each decode step's, as rankState.at reads
// them). The array holds no pointer, so the collector skips it.
//
// Timeline.All, At, Len and List expand a packed slice to the Slice the
// simulation made, field for field (TestPackedSlicesMatchUnpacked holds
// every configuration's timeline to the one kept as Slices).

// sliceTimes is a packed slice: its own times and flow, and its attributes'
// index in packedSlices.attrs.
type sliceTimes struct {
	StartS, EndS, WaitS float64
	Flow                int
	attr                int32
}

// sliceAttr is what a slice shares with many others: its bound, its
// collective's algorithm and protocol, its link class and its bytes.
type sliceAttr struct {
	Bound    Bound
	Algo     commcount.Algorithm
	Proto    string
	Link     topology.LinkClass
	HBMBytes int64
	L2Bytes  int64
}

func attrOf(sl *Slice) sliceAttr {
	return sliceAttr{sl.Bound, sl.Algo, sl.Proto, sl.Link, sl.HBMBytes, sl.L2Bytes}
}

// packedSlices is a timeline's slices, simulated rank by simulated rank in
// item order: rank ri's are times[base[ri]:base[ri+1]].
type packedSlices struct {
	ids      []int // plan rank of each simulated rank, ascending
	base     []int // len(ids)+1 entries
	pre, dec [][]partition.Op
	times    []sliceTimes
	attrs    []sliceAttr
	index    map[sliceAttr]int32 // while the simulation runs
	// recent holds attribute indices + 1 by a cheap hash of their bytes
	// and bound (attrSlot), looked at before index: the few distinct
	// attributes recur op after op, and comparing one costs less than
	// hashing its four strings.
	recent [64]int32
	// like[ri], where set, is simulated rank ri's templates and labels:
	// pre[ri] and dec[ri] are its template's ops, which the passes that read
	// no label (endsPass, windowUse.addPacked) read; the rank's own ops are
	// made where a slice is first expanded (ownOps), into own. mu guards
	// like and own: a timeline may be read by several goroutines.
	like []*likeRank
	own  [][2][]partition.Op
	plan *partition.Plan
	mu   sync.Mutex
}

// newPackedSlices is the packed output of simulation s: one slot per item
// of each simulated rank's run order (presizeSlices).
func newPackedSlices(s *simulator) *packedSlices {
	p := &packedSlices{ids: s.ids, base: make([]int, len(s.ranks)+1),
		pre: make([][]partition.Op, len(s.ranks)), dec: make([][]partition.Op, len(s.ranks)), index: map[sliceAttr]int32{}}
	n := 0
	for i, r := range s.ranks {
		p.base[i] = n
		p.pre[i], p.dec[i] = r.pre, r.dec
		n += r.count()
		if r.like != nil {
			if p.like == nil {
				p.like, p.own, p.plan = make([]*likeRank, len(s.ranks)), make([][2][]partition.Op, len(s.ranks)), s.plan
			}
			p.like[i] = r.like
		}
	}
	p.base[len(s.ranks)] = n
	p.times = make([]sliceTimes, n)
	return p
}

// intern is the index of a's attributes, added where new.
func (p *packedSlices) intern(a sliceAttr) int32 {
	if i, ok := p.index[a]; ok {
		return i
	}
	i := int32(len(p.attrs))
	p.attrs = append(p.attrs, a)
	p.index[a] = i
	return i
}

// put packs sl at slot i.
func (p *packedSlices) put(i int, sl *Slice) {
	a := attrOf(sl)
	h := attrSlot(&a)
	k := p.recent[h] - 1
	if k < 0 || p.attrs[k] != a {
		k = p.intern(a)
		p.recent[h] = k + 1
	}
	p.times[i] = sliceTimes{sl.StartS, sl.EndS, sl.WaitS, sl.Flow, k}
}

// attrSlot is a's place in packedSlices.recent: a hash of its bytes, its
// bound's text and its link's length (a cache's key: any two attributes
// may share one; equality is checked).
func attrSlot(a *sliceAttr) int {
	h := uint64(a.HBMBytes)*0x9e3779b97f4a7c15 ^ uint64(a.L2Bytes)*0xc2b2ae3d27d4eb4f ^
		uint64(len(a.Bound))<<7 ^ uint64(len(a.Link))<<17 ^ uint64(len(a.Algo))<<27
	if a.Bound != "" {
		h ^= uint64(a.Bound[0]) << 37
	}
	return int(h>>58) & 63
}

// sorted says whether the packed slices are in the order sortSlices gives:
// by rank (the simulated ranks ascending), then start, each rank's in item
// order where its starts never go back.
func (p *packedSlices) sorted() bool {
	for ri := range p.ids {
		if ri > 0 && p.ids[ri] <= p.ids[ri-1] {
			return false
		}
		ts := p.times[p.base[ri]:p.base[ri+1]]
		for i := 1; i < len(ts); i++ {
			if ts[i].StartS < ts[i-1].StartS {
				return false
			}
		}
	}
	return true
}

// ownOps is simulated rank ri's own ops of the prefill and a decode step,
// as its slices point at them: made from its templates (likeRank) on first
// need where it read its template's.
func (p *packedSlices) ownOps(ri int) (pre, dec []partition.Op) {
	if p.like == nil {
		return p.pre[ri], p.dec[ri]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.like[ri]
	if l == nil {
		if o := &p.own[ri]; o[0] != nil || o[1] != nil {
			return o[0], o[1]
		}
		return p.pre[ri], p.dec[ri]
	}
	rank := p.ids[ri]
	made := func(t partition.Program) []partition.Op {
		if q, ok := p.plan.ProgramLike(t, rank); ok {
			return q.Ops
		}
		return p.plan.Program(rank, t.Phase).Ops // not reached: planWork.entry checked ProgramLikeOK
	}
	p.own[ri] = [2][]partition.Op{made(l.pre), made(l.dec)}
	p.like[ri] = nil
	return p.own[ri][0], p.own[ri][1]
}

// expand sets sl to simulated rank ri's slice of item pc, whose decode step
// and op index (pc past the prefill) are step and idx; pre and dec are the
// rank's own ops (ownOps).
func (p *packedSlices) expand(sl *Slice, ri, pc, step, idx int, pre, dec []partition.Op) {
	t := &p.times[p.base[ri]+pc]
	a := &p.attrs[t.attr]
	*sl = Slice{Rank: p.ids[ri], StartS: t.StartS, EndS: t.EndS, WaitS: t.WaitS, Flow: t.Flow,
		Bound: a.Bound, Algo: a.Algo, Proto: a.Proto, Link: a.Link, HBMBytes: a.HBMBytes, L2Bytes: a.L2Bytes}
	if pc < len(pre) {
		sl.Phase, sl.Step, sl.Op = partition.Prefill, -1, &pre[pc]
	} else {
		sl.Phase, sl.Step, sl.Op = partition.Decode, step, &dec[idx]
	}
}

// each calls f with every slice in order (its index and the slice, valid
// until f returns) until f returns false.
func (p *packedSlices) each(f func(int, *Slice) bool) {
	var sl Slice
	for ri := range p.ids {
		n := p.base[ri+1] - p.base[ri]
		if n == 0 {
			continue
		}
		pre, dec := p.ownOps(ri)
		np, nd := len(pre), len(dec)
		step, idx := 0, 0
		for pc := range n {
			p.expand(&sl, ri, pc, step, idx, pre, dec)
			if !f(p.base[ri]+pc, &sl) {
				return
			}
			if pc >= np {
				if idx++; idx == nd {
					step, idx = step+1, 0
				}
			}
		}
	}
}

// at is slice i.
func (p *packedSlices) at(i int) Slice {
	ri := sort.Search(len(p.ids), func(r int) bool { return p.base[r+1] > i })
	pc := i - p.base[ri]
	var step, idx int
	if np := len(p.pre[ri]); pc >= np {
		step, idx = (pc-np)/len(p.dec[ri]), (pc-np)%len(p.dec[ri])
	}
	var sl Slice
	pre, dec := p.ownOps(ri)
	p.expand(&sl, ri, pc, step, idx, pre, dec)
	return sl
}

// list is every slice expanded, in order.
func (p *packedSlices) list() []Slice {
	out := make([]Slice, 0, len(p.times))
	p.each(func(_ int, sl *Slice) bool {
		out = append(out, *sl)
		return true
	})
	return out
}

// Len is the number of slices of the timeline.
func (t *Timeline) Len() int {
	if t.packed != nil {
		return len(t.packed.times)
	}
	return len(t.Slices)
}

// All yields every slice of the timeline with its index, in order: by rank,
// then start. Every reader of a timeline reads it through All, At or List:
// a simulated timeline keeps its slices packed (Slices is then empty).
func (t *Timeline) All() iter.Seq2[int, Slice] {
	return func(yield func(int, Slice) bool) {
		if t.packed != nil {
			t.packed.each(func(i int, sl *Slice) bool { return yield(i, *sl) })
			return
		}
		for i, sl := range t.Slices {
			if !yield(i, sl) {
				return
			}
		}
	}
}

// each is All without copies: sl is valid until f returns.
func (t *Timeline) each(f func(int, *Slice) bool) {
	if t.packed != nil {
		t.packed.each(f)
		return
	}
	for i := range t.Slices {
		if !f(i, &t.Slices[i]) {
			return
		}
	}
}

// At is slice i (0 ≤ i < Len()).
func (t *Timeline) At(i int) Slice {
	if t.packed != nil {
		return t.packed.at(i)
	}
	return t.Slices[i]
}

// List is every slice of the timeline, in order, in a new array.
func (t *Timeline) List() []Slice {
	if t.packed != nil {
		return t.packed.list()
	}
	return append([]Slice(nil), t.Slices...)
}

// endsPass is what estimateRun reads of a whole timeline before its
// windows: the prefill's end, the first decode step (−1: none) and each
// sample op's end (ends). A packed timeline is read where its fields are
// kept: the prefill's items, then each decode step's, rank by rank.
func (t *Timeline) endsPass(ends *sampleEnds) (prefillEnd float64, first int) {
	first = -1
	p := t.packed
	if p == nil {
		t.each(func(_ int, sl *Slice) bool {
			if sl.Phase == partition.Prefill {
				prefillEnd = max(prefillEnd, sl.EndS)
			}
			if sl.Phase == partition.Decode && (first < 0 || sl.Step < first) {
				first = sl.Step
			}
			ends.add(sl)
			return true
		})
		return prefillEnd, first
	}
	for ri := range p.ids {
		ts := p.times[p.base[ri]:p.base[ri+1]]
		pre, dec := p.pre[ri], p.dec[ri]
		for pc := range min(len(pre), len(ts)) {
			prefillEnd = max(prefillEnd, ts[pc].EndS)
			if pre[pc].Kind == partition.Sample {
				ends.ttft = max(ends.ttft, ts[pc].EndS)
			}
		}
		if len(ts) <= len(pre) {
			continue
		}
		first = 0 // a decode item's step counts from 0
		for i := range dec {
			if dec[i].Kind != partition.Sample {
				continue
			}
			mb := dec[i].Microbatch
			for k, pc := 0, len(pre)+i; pc < len(ts); k, pc = k+1, pc+len(dec) {
				ends.tok[k][mb] = max(ends.tok[k][mb], ts[pc].EndS)
			}
		}
	}
	return prefillEnd, first
}

// slot is the packed slice of simulated rank ri's item pc.
func (s *simulator) slot(ri, pc int) *sliceTimes {
	return &s.pk.times[s.base[ri]+pc]
}
