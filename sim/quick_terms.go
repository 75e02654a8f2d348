package sim

import (
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// This file is what a layer op's time in a stage shape depends on, worked
// out once per proxy: a layout's stage kinds share their layer's ops (the
// first stage's), so every stage shape of the layout prices the same layer
// ops, at its own L2 residency and first touch. opTerms holds what
// opTime computes of an op that does not depend on those; opTerms.at
// finishes it for a shape: opTime's numbers to the bit
// (TestOpTermsAreOpTime).

// Term kinds: how opTerms.at prices an op.
const (
	termsFixed   uint8 = iota // the same time whatever the shape: t, bound
	termsWeights              // a compute op reading reusable weights: computeCost at the residency
	termsColl                 // a collective the table does not price: the stage's TP group's, by collective
)

// opTerms is one op reduced to what its time in a stage shape depends on:
//   - a recv, a send, a compute op that reads no reusable weight and any
//     op the op-time table prices: nothing, so t and bound are its time;
//   - a GEMM or norm (reusable weights) the table does not price: the
//     residency and first touch; t (here FLOPs over peak and efficiency),
//     hbm (activation and KV bytes plus the weights), w (the weights) and
//     fixed (launch and host step) are the values computeCost computes;
//   - a collective: the stage's TP group, priced as opTime prices it
//     (collective, then a launch) from what of the op that reads (coll).
//
// It holds no pointer (a collective's collOp is in the cache's list:
// coll indexes QuickCache.collOps), 40 bytes: a search keeps thousands,
// which the collector then need not scan.
type opTerms struct {
	kind, bound uint8 // bound: a fixed op's, as its index in boundOrder
	coll        uint32
	// t is a fixed op's time, or a weights op's compute time.
	t, hbm, w, fixed float64
}

// collOp is what QuickCache.collective reads of a collective op: its kind,
// payload and name (for an error). Terms hold it rather than the op, so
// a layout's layer ops need not be kept (QuickCache.keepOps).
type collOp struct {
	kind  partition.Kind
	bytes int64
	name  string
}

// Bound indexes (boundOrder) computeCost's bounds come out as.
var (
	boundComputeAt = uint8(boundIndex(BoundCompute))
	boundHBMAt     = uint8(boundIndex(BoundHBM))
	boundL2At      = uint8(boundIndex(BoundL2))
	boundLatencyAt = uint8(boundIndex(BoundLatency))
)

// termsOf is ops' opTerms in phase on plan's hardware (the cache's).
func (c *QuickCache) termsOf(plan *partition.Plan, ops []partition.Op, phase partition.Phase) []opTerms {
	g := &plan.System.GPU
	table := c.table.of(plan)
	out := c.newTerms(len(ops))
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case partition.Recv, partition.Send:
			t, b, _ := c.opTime(plan, op, 1, false, 0, 1, phase) // neither reads the shape
			out[i] = opTerms{kind: termsFixed, t: t, bound: uint8(boundIndex(b))}
			continue
		case partition.AllReduce, partition.AllGather:
			if t, ok := table.Time(op); ok { // opTime's answer whatever the stage
				out[i] = opTerms{kind: termsFixed, t: t, bound: uint8(boundIndex(BoundTable))}
			} else {
				c.collOps = append(c.collOps, collOp{kind: op.Kind, bytes: op.Bytes, name: op.Name})
				out[i] = opTerms{kind: termsColl, coll: uint32(len(c.collOps) - 1)}
			}
			continue
		}
		if _, ok := table.Time(op); ok || !reusable(op) {
			// The table's time, or computeCost's with neither the residency
			// nor first touch reaching its sum.
			t, b, _ := c.opTime(plan, op, 1, false, 0, 1, phase)
			out[i] = opTerms{kind: termsFixed, t: t, bound: uint8(boundIndex(b))}
			continue
		}
		w := float64(op.WeightBytes)
		out[i] = opTerms{kind: termsWeights, w: w,
			hbm:   float64(op.ActBytes+op.KVReadBytes+op.KVWriteBytes) + w,
			t:     float64(op.FLOPs) / (g.PeakFLOPsPerS(plan.Model.DType) * opComputeEfficiency(g, op)),
			fixed: launchS(g, phase) + stepFixedS(g, phase, op)}
	}
	return out
}

// newTerms is a list of n zero opTerms from the cache's slab of them
// (termSlab: a block of 256 at a time, a 16,384-GPU search works out some
// 2,000), of capacity n: nothing appends to a layer's terms, and nothing
// takes a term from a block past its length, so the lists handed out stay
// put.
func (c *QuickCache) newTerms(n int) []opTerms {
	return carve(&c.termSlab, n, 256)
}

// carve is n zero Ts from the end of *slab, a list of capacity n: a new
// block of max(block, n) is made when the slab's room is too short. The
// lists handed out never overlap, and nothing takes from a block past its
// length, so they stay put; one appended past its capacity moves to an
// array of its own.
func carve[T any](slab *[]T, n, block int) []T {
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, max(block, n))
	}
	i := len(*slab)
	*slab = (*slab)[:i+n]
	return (*slab)[i : i+n : i+n]
}

// at is the op's time and bound (its index in boundOrder) on a stage at
// residency res, with first touch or not, whose TP group of tp ranks
// starts at rank first: opTime's (plan, phase: termsOf's).
func (o *opTerms) at(c *QuickCache, plan *partition.Plan, g *topology.GPU, res float64, firstTouch bool, first, tp int, phase partition.Phase) (float64, uint8, error) {
	switch o.kind {
	case termsFixed:
		return o.t, o.bound, nil
	case termsColl:
		co := &c.collOps[o.coll]
		cc, err := c.collectiveOf(plan, co.kind, co.bytes, co.name, first, tp)
		return cc.t + launchS(g, phase), cc.bi, err
	}
	// computeCost's terms that read the residency, in its order.
	fromL2 := 0.0
	if !firstTouch {
		fromL2 = o.w * res
	}
	hbm := o.hbm - fromL2
	th := hbm / (g.HBMBytesPerS * g.HBMEfficiency)
	tl := fromL2 / g.L2BytesPerS
	t, b := o.t, boundComputeAt
	if th > t {
		t, b = th, boundHBMAt
	}
	if tl > t {
		t, b = tl, boundL2At
	}
	if o.fixed > t {
		b = boundLatencyAt
	}
	return t + o.fixed, b, nil
}

// touches is touches(op) for the op o stands for: only a reusable-weight
// op with weight bytes prices differently on first touch.
func (o *opTerms) touches() bool { return o.kind == termsWeights && o.w != 0 }
