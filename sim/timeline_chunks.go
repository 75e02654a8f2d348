package sim

import (
	"math"

	"github.com/partbench/partbench/partition"
)

// Chunked prefill in steady state: where the prefill runs in many chunks,
// the timeline simulates chunks until four in a row follow one quadratic
// (each event's time moving by a step that grows by the same amount from
// chunk to chunk), then writes the following middle chunks from the last
// simulated one instead of simulating them, and goes on simulating.
//
// Why that is exact: the middle chunks of a prefill run the same ops as
// the first but for their attention ops, which read a cache longer by one
// chunk each time (partition's TestPrefillChunksDifferOnlyInAttentionPast),
// so an attention op's cost grows by the same amount each chunk as long as
// its roofline keeps its bound (checked: every attention op of every
// written chunk is priced, and its cost must lie on the line of the last
// two simulated chunks'). Every event of the simulation is a sum of costs
// and a maximum of earlier events (a recv ends at max(its clock, its
// message's arrival); a send's message leaves at max(its launch, the
// channel's previous arrival); a collective starts at its last member's
// arrival). Where each maximum is taken by the same side in every chunk,
// the state a chunk leaves to the next (each rank's clock, each channel's
// last arrival: no message crosses a chunk boundary, checked) moves from
// chunk to chunk by a step d(c) with d(c+1) − d(c) the selection of d(c) −
// d(c−1) the maxima make; so once the second differences of two chunks in
// a row agree, they agree from then on, and every event is the quadratic
// through its last three values. Each maximum's two sides differ by a
// margin (a recv's wait, its end less its message's arrival; a send's
// start on the channel less its launch, less the channel's previous
// arrival; a collective member's wait), itself quadratic in the chunk:
// the chunks are written only as far as every margin that is positive in
// the simulated chunks stays positive on its quadratic (a margin that is 0
// in all of them is a tie, which either side takes to the same time).
//
// Written times differ from simulated ones in the last bits; a write goes
// only as far as the second differences' own rounding noise, times about
// half the square of the chunks written, stays below chunkRelBudget of the
// latest time. TestChunkedPrefillMatchesStepwise holds
// every number of the estimate and every slice of the timeline to the
// step-by-step simulation within steadyRelTol.
//
// The check needs op costs that are functions of the op alone: no op-time
// table (whose core waits depend on the compute run before a wait), no
// shared cores, no measured op times; else every chunk is simulated, as the
// reference (Options.stepwise) always does.

// chunkWindow is how many simulated chunks in a row the quadratic is
// recognised by: two second differences.
const chunkWindow = 4

// chunkMinWrite is the fewest chunks worth writing from a window.
const chunkMinWrite = 2

// chunkRelBudget bounds, relative to the latest time of the window, how far
// an extrapolated time may drift by the rounding noise of the second
// differences it is extrapolated with (noise · m(m+1)/2 after m chunks).
const chunkRelBudget = 1e-11

// chunkCostRelTol is how far, relative to its cost, an attention op's cost
// in a written chunk may lie off the line through its last two simulated
// chunks' costs: rounding in the roofline's arithmetic.
const chunkCostRelTol = 1e-12

// chunkRec is what a window records of one op in one chunk: its end and
// wait, the two margins of the maximum it takes (see record), and a send's
// message's arrival (a recv's: the one it took).
type chunkRec struct{ end, wait, a, b, arr float64 }

// chunkSteady is a simulation's state while it looks for the prefill's
// steady state.
type chunkSteady struct {
	chunks int   // the prefill's chunks (K): middle chunks are 1 … K−2
	n      []int // a simulated rank's ops in one chunk (all its micro-batches' passes)
	base   []int // where a rank's ops lie in a chunk's records
	rec    [chunkWindow][]chunkRec
	// costs are the attention ops' costs costsLinear priced, stride chunks
	// per op, op x's at slot[x] (−1: not an attention op).
	costs  []OpCost
	stride int
	slot   []int
	from   int // the first chunk simulated since the last write (or 1)
	limit  int // the ranks stop at the start of this chunk
}

// newChunkSteady prepares simulation s (ranks and output set up, nothing
// run) to look for the prefill's steady state, or returns nil where it
// cannot: the step-by-step reference asked for, costs that are not
// functions of the op alone, too few chunks to gain any, or Programs whose
// chunks do not lie as partition builds them.
func newChunkSteady(s *simulator) *chunkSteady {
	k := s.plan.PrefillChunks
	if s.opts.stepwise || s.table != nil || s.plan.System.GPU.HostOpS > 0 || s.opts.share != nil || s.opts.Measured != nil ||
		k-2 < chunkWindow+chunkMinWrite {
		return nil
	}
	cs := &chunkSteady{chunks: k, from: 1, limit: 1 + chunkWindow}
	total := 0
	for _, r := range s.ranks {
		if r.items != nil || len(r.pre) == 0 {
			return nil
		}
		n := 0
		for n < len(r.pre) && r.pre[n].Chunk == 0 {
			n++
		}
		// Chunk c's ops are [c·n, (c+1)·n) up to the last chunk's start.
		if n == 0 || len(r.pre) <= (k-1)*n || r.pre[(k-1)*n].Chunk != k-1 {
			return nil
		}
		for c := 1; c < k-1; c++ {
			if r.pre[c*n].Chunk != c || r.pre[(c+1)*n-1].Chunk != c {
				return nil
			}
		}
		// No first touch after chunk 0: the middle chunks' ops are priced
		// alike.
		for pc := n; pc < (k-1)*n && pc < len(r.first); pc++ {
			if r.first[pc] {
				return nil
			}
		}
		cs.n = append(cs.n, n)
		cs.base = append(cs.base, total)
		total += n
	}
	for w := range cs.rec {
		cs.rec[w] = make([]chunkRec, total)
	}
	cs.hold(s)
	return cs
}

// hold stops every rank at the start of chunk cs.limit.
func (cs *chunkSteady) hold(s *simulator) {
	for ri, r := range s.ranks {
		r.stop = cs.limit * cs.n[ri]
	}
}

// release lets every rank run to its end and stops looking.
func (cs *chunkSteady) release(s *simulator) {
	for _, r := range s.ranks {
		r.stop = 0
	}
	s.chunks = nil
}

// record keeps simulated rank ri's slice of prefill item pc for the window:
// a and b are the margins of the maximum the op took (a send: its start on
// the channel less its launch, and less the channel's previous arrival; a
// recv: its wait, and its end less its message's arrival; a collective: the
// member's wait), arr a message's arrival.
func (cs *chunkSteady) record(ri, pc int, sl *Slice, a, b, arr float64) {
	if cs == nil || sl.Phase != partition.Prefill {
		return
	}
	n := cs.n[ri]
	c := pc / n
	if c < cs.from || c >= cs.limit {
		return
	}
	cs.rec[c%chunkWindow][cs.base[ri]+pc-c*n] = chunkRec{sl.EndS, sl.WaitS, a, b, arr}
}

// quad is one recorded quantity over the window's four chunks: its value
// in the last (v), its last step (d) and second difference (e, the mean of
// the window's two), and how far the two second differences differ
// (noise).
type quad struct{ v, d, e, noise float64 }

func quadOf(v0, v1, v2, v3 float64) quad {
	e1, e2 := v2-2*v1+v0, v3-2*v2+v1
	return quad{v: v3, d: v3 - v2, e: (v3 - v2 - v1 + v0) / 2, noise: math.Abs(e2 - e1)}
}

// at is the quantity m chunks after the window's last.
func (q quad) at(m int) float64 {
	f := float64(m)
	return q.v + f*q.d + f*(f+1)/2*q.e
}

// positiveFor is how many chunks after the window's last (at most max) the
// quadratic of a margin stays above tol.
func (q quad) positiveFor(tol float64, max int) int {
	// q.at(m) − tol = a + b·m + c·m² with c = e/2, b = d + e/2.
	a, b, c := q.v-tol, q.d+q.e/2, q.e/2
	m := max
	switch {
	case c == 0 && b < 0:
		m = min(m, int(math.Ceil(-a/b))-1)
	case c != 0:
		if disc := b*b - 4*a*c; disc >= 0 {
			// The smallest root above 0, if any.
			sq := math.Sqrt(disc)
			for _, r := range []float64{(-b - sq) / (2 * c), (-b + sq) / (2 * c)} {
				if r > 0 && r < float64(m)+1 {
					m = min(m, int(math.Ceil(r))-1)
				}
			}
		}
	}
	// Rounding in the roots: step back while the end or the vertex is not
	// above tol.
	for m > 0 && !(q.at(m) > tol && q.aboveAtVertex(tol, m)) {
		m--
	}
	return max0(m)
}

// aboveAtVertex says whether the quadratic is above tol at its lowest
// point in [1, m] where that lies inside.
func (q quad) aboveAtVertex(tol float64, m int) bool {
	if q.e <= 0 {
		return true // concave or straight: lowest at an end
	}
	x := -(q.d + q.e/2) / q.e // vertex of a + b·m + c·m²
	if x <= 1 || x >= float64(m) {
		return true
	}
	lo := int(math.Floor(x))
	return q.at(lo) > tol && q.at(lo+1) > tol
}

func max0(m int) int {
	if m < 0 {
		return 0
	}
	return m
}

// settle is called when every rank stands at the start of chunk cs.limit.
// It writes the chunks that follow where the window allows, or lets the
// simulation run one more chunk, or stops looking where no chunk is left
// to gain.
func (cs *chunkSteady) settle(s *simulator) {
	j := cs.limit - 1
	if m := cs.writable(s, j); m >= chunkMinWrite {
		cs.write(s, j, m)
		cs.from = j + m + 1
		cs.limit = cs.from + chunkWindow
	} else {
		cs.limit++
	}
	// A window is worth waiting for only where chunks are left after it.
	if cs.limit-1+chunkMinWrite > cs.chunks-2 {
		cs.release(s)
		return
	}
	cs.hold(s)
}

// writable is how many chunks after chunk j (the window's last) may be
// written: 0 where the window is not one quadratic.
func (cs *chunkSteady) writable(s *simulator, j int) int {
	if j-(chunkWindow-1) < cs.from {
		return 0
	}
	// Nothing in flight across the boundary: no message unreceived, no
	// collective with members waiting.
	for _, q := range s.inbox {
		if len(q) > 0 {
			return 0
		}
	}
	for _, g := range s.groups {
		if g.n != 0 {
			return 0
		}
	}
	r0, r1, r2, r3 := cs.rec[(j-3)%chunkWindow], cs.rec[(j-2)%chunkWindow], cs.rec[(j-1)%chunkWindow], cs.rec[j%chunkWindow]
	latest := 0.0
	for i := range r3 {
		latest = max(latest, r3[i].end)
	}
	if !(latest > 0) {
		return 0
	}
	tol := steadyShiftTol * latest // a margin this close to 0 is a tie
	m := cs.chunks - 2 - j
	noise := 0.0
	margin := func(q quad, x [4]float64) {
		if math.Abs(x[0]) <= tol && math.Abs(x[1]) <= tol && math.Abs(x[2]) <= tol && math.Abs(x[3]) <= tol {
			return // a tie in every chunk: either side gives the same time
		}
		if !(x[0] > tol && x[1] > tol && x[2] > tol && x[3] > tol) {
			m = 0 // the maximum changed sides inside the window
			return
		}
		m = min(m, q.positiveFor(tol, m))
	}
	for ri, r := range s.ranks {
		tmpl := r.pre[j*cs.n[ri] : (j+1)*cs.n[ri]]
		for i := range tmpl {
			x := cs.base[ri] + i
			a, b, c, d := &r0[x], &r1[x], &r2[x], &r3[x]
			for _, q := range [...]quad{
				quadOf(a.end, b.end, c.end, d.end), quadOf(a.wait, b.wait, c.wait, d.wait), quadOf(a.arr, b.arr, c.arr, d.arr),
			} {
				noise = max(noise, q.noise)
			}
			switch tmpl[i].Kind {
			case partition.Send, partition.Recv:
				qb := quadOf(a.b, b.b, c.b, d.b)
				noise = max(noise, qb.noise)
				margin(qb, [4]float64{a.b, b.b, c.b, d.b})
				fallthrough
			case partition.AllReduce, partition.AllGather:
				qa := quadOf(a.a, b.a, c.a, d.a)
				noise = max(noise, qa.noise)
				margin(qa, [4]float64{a.a, b.a, c.a, d.a})
			}
			if m == 0 {
				return 0
			}
		}
	}
	// Rounding: noise · m(m+1)/2 within the budget (the noise at least a
	// few units in the last place of the latest time).
	noise = max(noise, 4*latest*0x1p-52)
	if lim := int(math.Sqrt(2 * chunkRelBudget * latest / noise)); lim < m {
		m = lim
	}
	return min(m, cs.costsLinear(s, j, m))
}

// costsLinear is how many chunks after j (at most m) every attention op
// costs what the line through its chunks j−1 and j gives, with the same
// bound. It keeps the costs it priced for write (cs.costs, slot per op).
func (cs *chunkSteady) costsLinear(s *simulator, j, m int) int {
	g := &s.plan.System.GPU
	cs.stride, cs.costs = m, cs.costs[:0]
	if cs.slot == nil {
		cs.slot = make([]int, len(cs.rec[0]))
	}
	for ri, r := range s.ranks {
		n := cs.n[ri]
		for i := 0; i < n; i++ {
			x := cs.base[ri] + i
			cs.slot[x] = -1
			if r.pre[j*n+i].Kind != partition.Attention || m == 0 {
				continue
			}
			cs.slot[x] = len(cs.costs) / cs.stride
			c0 := computeCost(g, s.plan.Model.DType, &r.pre[(j-1)*n+i], s.residency[ri], false, partition.Prefill)
			c1 := computeCost(g, s.plan.Model.DType, &r.pre[j*n+i], s.residency[ri], false, partition.Prefill)
			step := c1.TimeS - c0.TimeS
			for k := 1; k <= cs.stride; k++ {
				if k > m { // past where another op left its line
					cs.costs = append(cs.costs, OpCost{})
					continue
				}
				c := computeCost(g, s.plan.Model.DType, &r.pre[(j+k)*n+i], s.residency[ri], false, partition.Prefill)
				want := c1.TimeS + float64(k)*step
				if c.Bound != c1.Bound || !(math.Abs(c.TimeS-want) <= chunkCostRelTol*c.TimeS) {
					m = k - 1
				}
				cs.costs = append(cs.costs, c)
			}
		}
	}
	return m
}

// write writes chunks j+1 … j+m from the window (chunk j its last): into
// the timeline's slices (each starting where the rank's previous one
// ended, as in the simulation), or where it keeps none, a sample's end
// into the headline numbers; then each rank stands at the start of chunk
// j+m+1 with its clock, and each channel its last arrival, where the
// simulation would have left them.
func (cs *chunkSteady) write(s *simulator, j, m int) {
	r0, r1, r2, r3 := cs.rec[(j-3)%chunkWindow], cs.rec[(j-2)%chunkWindow], cs.rec[(j-1)%chunkWindow], cs.rec[j%chunkWindow]
	var fl *chunkFlows
	if s.ends == nil {
		fl = newChunkFlows(s, cs, j)
	}
	type tmpl struct {
		end, wait quad
		waits     bool // a wait not 0 in every chunk of the window
	}
	var ts []tmpl
	for ri, r := range s.ranks {
		n := cs.n[ri]
		ts = ts[:0]
		for i := 0; i < n; i++ {
			x := cs.base[ri] + i
			a, b, c, d := &r0[x], &r1[x], &r2[x], &r3[x]
			t := tmpl{end: quadOf(a.end, b.end, c.end, d.end), wait: quadOf(a.wait, b.wait, c.wait, d.wait)}
			t.waits = a.wait != 0 || b.wait != 0 || c.wait != 0 || d.wait != 0
			ts = append(ts, t)
			if op := &r.pre[(j+m)*n+i]; op.Kind == partition.Send { // the channel's last arrival so far
				s.chanFree[chanKey{s.ids[ri], op.Peer}] = quadOf(a.arr, b.arr, c.arr, d.arr).at(m)
			}
		}
		prevEnd := r.clock // the end of chunk j's last op
		for k := 1; k <= m; k++ {
			c := j + k
			for i := range ts {
				t := &ts[i]
				end := max(prevEnd, t.end.at(k))
				op := &r.pre[c*n+i]
				if s.ends != nil {
					if op.Kind == partition.Sample {
						s.ends.add(&Slice{Phase: partition.Prefill, Step: -1, Op: op, EndS: end})
					}
					if s.uses != nil { // a summary: the opUse of the slice written below
						u := &s.uses[s.useBase[ri]+c*n+i]
						*u = s.uses[s.useBase[ri]+j*n+i]
						u.start, u.end, u.wait = prevEnd, end, 0
						if t.waits {
							u.wait = min(max(0, t.wait.at(k)), end-prevEnd)
						}
						if slot := cs.slot[cs.base[ri]+i]; slot >= 0 {
							u.bound = int8(useBoundIndex(cs.costs[slot*cs.stride+k-1].Bound))
						}
					}
					prevEnd = end
					continue
				}
				sl := s.slot(ri, c*n+i) // packed (timeline_packed.go): its op is item c·n+i's
				*sl = *s.slot(ri, j*n+i)
				sl.StartS, sl.EndS = prevEnd, end
				sl.WaitS = 0
				if t.waits {
					sl.WaitS = min(max(0, t.wait.at(k)), end-prevEnd)
				}
				if slot := cs.slot[cs.base[ri]+i]; slot >= 0 { // its bytes and bound follow its cache
					cost := &cs.costs[slot*cs.stride+k-1]
					a := s.pk.attrs[sl.attr]
					a.Bound, a.HBMBytes, a.L2Bytes = cost.Bound, cost.HBMBytes, cost.L2Bytes
					sl.attr = s.pk.intern(a)
				}
				if sl.Flow != 0 {
					sl.Flow = fl.flow(ri, i, k, op.Kind)
				}
				prevEnd = end
			}
		}
		r.clock = prevEnd
		r.pc = (j + m + 1) * n
	}
	if fl != nil {
		s.flows += m * fl.perChunk
	} else {
		for ri, r := range s.ranks {
			for i := 0; i < cs.n[ri]; i++ {
				if r.pre[i].Kind == partition.Send {
					s.flows += m
				}
			}
		}
	}
	s.chunksWritten += m
}

// chunkFlows numbers the flows of written chunks: each send of chunk j+k
// takes a new number (after the simulation's, chunk by chunk, in rank and
// op order), and each recv the number of the send of the same chunk its
// template in chunk j took its message from (no message crosses a chunk
// boundary: writable checks).
type chunkFlows struct {
	base     int
	perChunk int
	ord      [][]int // a send's position among a chunk's sends
	src      [][]int // a recv's send: simulated rank ri and op i as ri<<32 | i, −1 none
}

func newChunkFlows(s *simulator, cs *chunkSteady, j int) *chunkFlows {
	f := &chunkFlows{base: s.flows, ord: make([][]int, len(s.ranks)), src: make([][]int, len(s.ranks))}
	sends := map[int]int{}
	for ri := range s.ranks {
		n := cs.n[ri]
		f.ord[ri], f.src[ri] = make([]int, n), make([]int, n)
		for i := 0; i < n; i++ {
			sl := s.slot(ri, j*n+i)
			f.src[ri][i] = -1
			if s.ranks[ri].pre[j*n+i].Kind == partition.Send {
				f.ord[ri][i] = f.perChunk
				f.perChunk++
				sends[sl.Flow] = ri<<32 | i
			}
		}
	}
	for ri := range s.ranks {
		n := cs.n[ri]
		for i := 0; i < n; i++ {
			if sl := s.slot(ri, j*n+i); s.ranks[ri].pre[j*n+i].Kind == partition.Recv {
				if p, ok := sends[sl.Flow]; ok {
					f.src[ri][i] = p
				}
			}
		}
	}
	return f
}

// flow is the flow number of simulated rank ri's op i (kind) in chunk j+k.
func (f *chunkFlows) flow(ri, i, k int, kind partition.Kind) int {
	if kind == partition.Recv {
		p := f.src[ri][i]
		if p < 0 {
			return 0
		}
		ri, i = p>>32, p&(1<<32-1)
	}
	return f.base + (k-1)*f.perChunk + f.ord[ri][i] + 1
}

// prefillProgram is plan.Program(rank, Prefill), with the middle chunks'
// passes copied from the first pass rather than built op by op: partition
// builds a middle pass as the first pass with its micro-batch and chunk
// index set and each attention op moved behind the chunks before it
// (partition.Op.AtPast; partition's TestPrefillChunksDifferOnlyInAttentionPast
// holds the builder to it). The first chunk's and the last chunk's passes
// are partition's own (the last is shorter and samples).
// TestPrefillProgramIsPlanProgram holds the result to plan.Program.
func prefillProgram(plan *partition.Plan, rank int) partition.Program {
	k, mbs := plan.PrefillChunks, plan.Microbatches
	if k < 3 {
		return plan.Program(rank, partition.Prefill)
	}
	first := plan.PrefillPass(rank, 0, 0)
	n := len(first)
	var last []partition.Op
	for mb := 0; mb < mbs; mb++ {
		last = plan.AppendPrefillPass(last, rank, mb, k-1)
	}
	ops := make([]partition.Op, 0, (k-1)*mbs*n+len(last))
	for mb := 0; mb < mbs; mb++ {
		ops = plan.AppendPrefillPass(ops, rank, mb, 0)
	}
	if len(ops) != mbs*n { // passes of unequal length: build as partition does
		return plan.Program(rank, partition.Prefill)
	}
	for c := 1; c < k-1; c++ {
		past := c * plan.PrefillChunk
		for mb := 0; mb < mbs; mb++ {
			at := len(ops)
			ops = append(ops, first...)
			pass := ops[at:]
			for i := range pass {
				op := &pass[i]
				op.Microbatch, op.Chunk = mb, c
				if op.Kind == partition.Attention {
					*op = op.AtPast(past)
				}
			}
		}
	}
	ops = append(ops, last...)
	return partition.Program{Rank: rank, Phase: partition.Prefill, Ops: ops}
}
