package sim

import (
	"fmt"
	"math"
	"sort"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// BoundTable marks an op priced from the hardware profile's op-time table
// (a time measured on the machine at that shape) instead of the roofline.
const BoundTable Bound = "table"

// OpKey is where op sits in an op-time table (configs.OpTime): its kind,
// the shape that must match exactly, the size interpolated along (token
// rows of a compute op; bytes of a collective, send or recv) and, for
// attention, the context (positions the chunk's last query sees, past +
// query length; 0 for every other kind). calib writes its entries with this
// function, sim reads them with it: one definition on both sides.
func OpKey(op *partition.Op) (kind, shape string, size, context int64) {
	kind, size = string(op.Kind), int64(op.Rows)
	switch op.Kind {
	case partition.Gemm:
		shape = fmt.Sprintf("n=%d k=%d bias=%t", op.N, op.K, op.Bias != "")
	case partition.Attention:
		shape = fmt.Sprintf("seqs=%d heads=%d kv_heads=%d head_dim=%d rope=%t bidirectional=%t",
			op.Seqs, op.Heads, op.KVHeads, op.HeadDim, op.RopeTheta > 0, op.Bidirectional)
		size, context = int64(op.QLen), int64(op.Past+op.QLen)
	case partition.Activation:
		shape = fmt.Sprintf("width=%d mlp=%s", op.OutWidth, op.MLP)
	case partition.Input:
		shape = fmt.Sprintf("width=%d vocab=%d tensor=%s", op.OutWidth, op.Vocab, op.Tensor)
	case partition.Sample:
		shape = fmt.Sprintf("width=%d vocab=%d shards=%d in=%s", op.InWidth, op.Vocab, op.VocabShards, op.In)
	case partition.AllReduce, partition.AllGather:
		shape, size = fmt.Sprintf("ranks=%d", len(op.Group)), op.Bytes
	case partition.Send, partition.Recv:
		shape, size = "ranks=2", op.Bytes
	default: // norms, residual, position
		shape = fmt.Sprintf("width=%d", op.OutWidth)
	}
	return kind, shape, size, context
}

// OpTable is a profile's op-time table indexed for look-up. Between
// measured shapes it interpolates along the size between the measured
// neighbours a ≤ s ≤ b, and for attention also along the context over
// the four measured corners around the point (bilinearly). How depends on
// the kind:
//
//   - a compute op (partition's compute kinds: GEMM, attention, norms,
//     activation, residual, position, input, sample) linearly,
//     t(s) = t(a) + (t(b) − t(a))·(s − a)/(b − a): its time is a fixed cost
//     plus a cost per token row (and per row × position for attention),
//     which this reproduces exactly between two points, however far apart
//     they are measured — a table of a batch's decode (16 rows) and its
//     prefill (32,512 rows) prices a 2,032-row prefill at what it costs
//     (docs/calibration.md, "Interpolation");
//   - every other entry (collectives, sends and receives by bytes, the
//     shared-core waits and stretches by burst) as a power law,
//     t(s) = t(a)^(1−u) · t(b)^u with u = ln(s/a) / ln(b/a): linear in log
//     size and log time.
//
// Below the smallest measured size a compute op's line through its two
// smallest sizes a < b goes on down (a fixed cost plus a cost per row, as
// between them), but never under t(a)·s/a, what a line through the origin
// and the smallest entry would charge: a decode at one row priced from a
// table of 16 and 32,512 rows costs about the 16-row entry (its weights
// are read all the same), where the roofline charged it the bandwidth
// floor alone (docs/calibration.md, "Interpolation"). Above the largest
// measured size, below the smallest for every other kind, or where a
// corner was not measured, there is no entry and the roofline prices the
// op.
type OpTable struct {
	grids map[string]*opGrid // kind + "\x00" + shape
	gapS  float64            // the executor's op gap (optable_gap.go), looked up once
}

type opGrid struct {
	sizes, contexts []int64
	t               map[[2]int64]float64
}

// NewOpTable indexes ts (nil or empty: a table with no entries).
func NewOpTable(ts []configs.OpTime) *OpTable {
	if len(ts) == 0 {
		return nil
	}
	tab := &OpTable{grids: map[string]*opGrid{}}
	for _, e := range ts {
		k := e.Kind + "\x00" + e.Shape
		g := tab.grids[k]
		if g == nil {
			g = &opGrid{t: map[[2]int64]float64{}}
			tab.grids[k] = g
		}
		g.t[[2]int64{e.Size, e.Context}] = e.TimeS
	}
	for _, g := range tab.grids {
		ss, cs := map[int64]bool{}, map[int64]bool{}
		for k := range g.t {
			ss[k[0]], cs[k[1]] = true, true
		}
		g.sizes, g.contexts = sortedKeys(ss), sortedKeys(cs)
	}
	if v, ok := tab.Lookup(configs.OpGapKind, configs.OpGapShape, 1, 0); ok {
		tab.gapS = v
	}
	return tab
}

func sortedKeys(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Len is the number of kinds × shapes the table holds.
func (t *OpTable) Len() int {
	if t == nil {
		return 0
	}
	return len(t.grids)
}

// Lookup is the table's time of kind at shape, size and context, and
// whether it has one (see OpTable for the interpolation).
func (t *OpTable) Lookup(kind, shape string, size, context int64) (float64, bool) {
	if t == nil || size <= 0 {
		return 0, false
	}
	g := t.grids[kind+"\x00"+shape]
	if g == nil {
		return 0, false
	}
	in := interpOf(kind)
	s0, s1, u, ok := in.bracket(g.sizes, size)
	if !ok {
		if s0, s1, u, ok = in.below(g.sizes, size); !ok {
			return 0, false
		}
	}
	at := func(c int64) (float64, bool) { // along the size at context c
		t, ok := in.lerp(g.t, [2]int64{s0, c}, [2]int64{s1, c}, u)
		if ok && u < 0 { // below the range: at least the smallest entry per row
			t = max(t, g.t[[2]int64{s0, c}]*float64(size)/float64(s0))
		}
		return t, ok
	}
	if len(g.contexts) == 1 && g.contexts[0] == context {
		return at(context)
	}
	if context <= 0 {
		return 0, false
	}
	c0, c1, v, ok := in.bracket(g.contexts, context)
	if !ok {
		return 0, false
	}
	lo, ok0 := at(c0)
	hi, ok1 := at(c1)
	if !ok0 || !ok1 {
		return 0, false
	}
	return in.mix(lo, hi, v), true
}

// interp is how a kind's entries are interpolated (see OpTable): linear,
// or a power law (linear in logs).
type interp bool

const (
	linear   interp = true
	powerLaw interp = false
)

// interpOf is the interpolation of kind's entries: linear for partition's
// compute kinds, a power law for every other.
func interpOf(kind string) interp {
	switch partition.Kind(kind) {
	case partition.Input, partition.Norm, partition.LayerNorm, partition.Position, partition.Gemm,
		partition.Attention, partition.Activation, partition.Residual, partition.Sample:
		return linear
	}
	return powerLaw
}

// mix is the point u of the way from ta to tb.
func (in interp) mix(ta, tb, u float64) float64 {
	if in == linear {
		return ta + (tb-ta)*u
	}
	return math.Exp((1-u)*math.Log(ta) + u*math.Log(tb))
}

// Time is the table's time of op (OpKey), and whether it has one.
func (t *OpTable) Time(op *partition.Op) (float64, bool) {
	if t == nil {
		return 0, false
	}
	kind, shape, size, context := OpKey(op)
	return t.Lookup(kind, shape, size, context)
}

// bracket finds the neighbours a ≤ x ≤ b of x in the ascending, positive
// xs and x's position between them, u: (x − a)/(b − a) for linear, on a
// log scale ln(x/a)/ln(b/a) for a power law (0 when x is measured); false
// outside [xs[0], xs[last]].
func (in interp) bracket(xs []int64, x int64) (a, b int64, u float64, ok bool) {
	i := sort.Search(len(xs), func(i int) bool { return xs[i] >= x })
	switch {
	case i == len(xs):
		return 0, 0, 0, false
	case xs[i] == x:
		return x, x, 0, true
	case i == 0 || xs[i-1] <= 0:
		return 0, 0, 0, false
	}
	a, b = xs[i-1], xs[i]
	if in == linear {
		return a, b, float64(x-a) / float64(b-a), true
	}
	return a, b, math.Log(float64(x)/float64(a)) / math.Log(float64(b)/float64(a)), true
}

// below extends a linear kind's line through its two smallest measured
// sizes a < b below a: x < a at u = (x − a)/(b − a) < 0 (see OpTable);
// false for a power law, fewer than two sizes, or x not below a.
func (in interp) below(xs []int64, x int64) (a, b int64, u float64, ok bool) {
	if in != linear || len(xs) < 2 || x <= 0 || x >= xs[0] {
		return 0, 0, 0, false
	}
	a, b = xs[0], xs[1]
	return a, b, float64(x-a) / float64(b-a), true
}

// lerp is the point u of the way between the entries at a and b (mix),
// false when either point is not measured.
func (in interp) lerp(t map[[2]int64]float64, a, b [2]int64, u float64) (float64, bool) {
	ta, oka := t[a]
	tb, okb := t[b]
	if !oka || !okb {
		return 0, false
	}
	if u == 0 {
		return ta, true
	}
	return in.mix(ta, tb, u), true
}

// planOpTable is the op-time table of plan's hardware (nil: none).
func planOpTable(plan *partition.Plan) *OpTable {
	if plan == nil || plan.Config == nil {
		return nil
	}
	return NewOpTable(plan.Config.Hardware.OpTimes)
}

// quickTable caches the op-time table of the hardware a QuickCache last
// priced (indexed once per profile, not per op).
type quickTable struct {
	src   []configs.OpTime
	table *OpTable
}

func (q *quickTable) of(plan *partition.Plan) *OpTable {
	if plan == nil || plan.Config == nil || len(plan.Config.Hardware.OpTimes) == 0 {
		return nil
	}
	ts := plan.Config.Hardware.OpTimes
	if len(q.src) != len(ts) || &q.src[0] != &ts[0] {
		q.src, q.table = ts, NewOpTable(ts)
	}
	return q.table
}

// countPricing sets each rank's TableOps and ModelOps from the timeline:
// its ops of the prefill and of the first decode step, by whether the
// op-time table priced them (Bound "table"). A rank a per-stage timeline
// does not simulate gets its stand-in's counts.
func (e *Estimate) countPricing() {
	tl := e.Timeline
	if tl == nil || len(e.Ranks.Kinds) == 0 {
		return
	}
	first := -1
	for _, sl := range tl.All() {
		if sl.Phase == partition.Decode && (first < 0 || sl.Step < first) {
			first = sl.Step
		}
	}
	div := standInWidth(tl) // counts by simulated rank: rank / div
	table, model := make([]int, standIns(tl)), make([]int, standIns(tl))
	last, i := -1, 0 // a rank's slices are consecutive: divide once per rank
	for _, sl := range tl.All() {
		if sl.Op.Kind == partition.Recv || (sl.Phase == partition.Decode && sl.Step != first) || sl.Rank >= tl.Ranks {
			continue
		}
		if sl.Rank != last {
			last, i = sl.Rank, sl.Rank/div
		}
		if sl.Bound == BoundTable {
			table[i]++
		} else {
			model[i]++
		}
	}
	e.setPricing(table, model)
}

// setPricing sets each kind's TableOps and ModelOps from the counts by
// simulated rank (windowUse.pricing counts them in its pass).
func (e *Estimate) setPricing(table, model []int) {
	tl := e.Timeline
	if tl == nil || len(e.Ranks.Kinds) == 0 {
		return
	}
	div := standInWidth(tl)
	for i := range e.Ranks.Kinds { // a kind's ranks are its stand-in's
		k := &e.Ranks.Kinds[i]
		if k.Rank >= tl.Ranks {
			continue
		}
		k.TableOps, k.ModelOps = table[k.Rank/div], model[k.Rank/div]
	}
}
