package sim

import (
	"fmt"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// A layer op's terms (opTerms), finished by at for a stage shape, must
// give opTime's time to the bit and its bound, and its error; so must the
// terms a cache keeps of the ops around each proxy layer (setAround). Every
// such op of every proxy pass (first and last prefill chunk, decode step) of
// the 4,096- and 16,384-GPU searches, and of the 16,384-GPU search at
// batch 16 and context 512 (TP degrees down to 1, so groups that start
// inside a node; once more with CUDA graphs, so that a decode step's
// launches differ from a prefill pass's), is priced both ways at eleven residencies from 0 to 1
// and the shapes' own, with and without first touch, for TP groups
// starting at every offset in a node; then again on a plan whose op-time
// table prices every other GEMM and norm of the layer (the rest by the
// roofline) and one of its collectives. Where the terms say first touch changes nothing (passBoth
// then prices the op once), opTime must give the same time either way.
func TestOpTermsAreOpTime(t *testing.T) {
	compared, weights, tabled, around := 0, 0, 0, 0
	// check prices ops by opTime and by their terms: those given, or else
	// termsOf's.
	check := func(c *QuickCache, p *partition.Plan, ops []partition.Op, terms []opTerms, phase partition.Phase, shapeRes []float64) {
		t.Helper()
		if terms == nil {
			terms = c.termsOf(p, ops, phase)
		}
		if len(terms) != len(ops) {
			t.Fatalf("%s %s: %d terms for %d ops", p.Config.Name, phase, len(terms), len(ops))
		}
		g := &p.System.GPU
		for i := range ops {
			op := &ops[i]
			for _, res := range append([]float64{0, 1e-3, 0.05, 0.1, 0.25, 1.0 / 3, 0.5, 0.75, 0.9, 0.999, 1}, shapeRes...) {
				for _, ft := range []bool{false, true} {
					for off := 0; off < p.System.Topology.GPUsPerNode; off += max(1, p.TP) {
						got, gb, gerr := terms[i].at(c, p, g, res, ft, off, p.TP, phase)
						want, wb, werr := c.opTime(p, op, res, ft, off, p.TP, phase)
						if got != want || gb != uint8(boundIndex(wb)) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
							t.Fatalf("%s %s %s, residency %v, first touch %v, group at %d: terms %v (%s, %v), opTime %v (%s, %v)",
								p.Config.Name, phase, op.Name, res, ft, off, got, boundOrder[gb], gerr, want, wb, werr)
						}
						if ft && !terms[i].touches() { // passBoth prices it once: first touch must change nothing
							if once, _, _ := c.opTime(p, op, res, false, off, p.TP, phase); once != want {
								t.Fatalf("%s %s: terms say first touch changes nothing, opTime %v and %v", p.Config.Name, op.Name, once, want)
							}
						}
						compared++
					}
				}
			}
			switch {
			case terms[i].kind == termsWeights:
				weights++
			case terms[i].kind == termsFixed && reusable(op):
				tabled++
			}
		}
	}
	var last *partition.Plan
	for _, tc := range []struct {
		gpus          int
		small, graphs bool
	}{{4096, false, false}, {16384, false, false}, {16384, true, false}, {16384, true, true}} {
		spec := syntheticSpec(t, tc.gpus)
		if tc.small {
			spec.Config.Workload.Batch, spec.Config.Workload.Context = 16, 512
		}
		// With CUDA graphs a decode step's kernels launch for GraphKernelS
		// and its sample adds GraphLaunchS: a term worked out for the
		// wrong phase prices differently.
		spec.System.GPU.CUDAGraphs = tc.graphs
		c, plans := pricedLayouts(t, spec)
		for pk, kinds := range c.passes {
			p := plans[pk]
			var res []float64 // the residencies of the layout's shapes
			for key := range c.allStages() {
				if key.proxyKey == pk {
					k := kinds[key.kind]
					if ws := int64(key.layers)*k.layerWS + k.extraWS; ws > 0 {
						res = append(res, min(1, float64(p.System.GPU.UsableL2Bytes())/float64(ws)))
					}
				}
			}
			for _, k := range kinds {
				if k == nil {
					continue
				}
				check(c, p, k.first.layer, nil, partition.Prefill, res)
				check(c, p, k.last.layer, nil, partition.Prefill, res)
				check(c, p, k.decode.layer, nil, partition.Decode, res)
				// The ops around the layer, by the terms the cache keeps
				// of them (setAround), which stage prices.
				for _, pass := range []struct {
					p     *passOps
					phase partition.Phase
				}{{&k.first, partition.Prefill}, {&k.last, partition.Prefill}, {&k.decode, partition.Decode}} {
					check(c, p, pass.p.pre, pass.p.preT, pass.phase, res)
					check(c, p, pass.p.post, pass.p.postT, pass.phase, res)
					around += len(pass.p.pre) + len(pass.p.post)
				}
			}
			if last == nil || p.TP > last.TP { // a layer with collectives to table
				last = p
			}
		}
	}
	// An op-time table pricing every other GEMM and norm of the layer.
	c := NewQuickCache(CollectiveOptions{})
	kinds, err := (&QuickCache{keepOps: true}).withReset(last).proxy(last, layoutOf(last))
	if err != nil {
		t.Fatal(err)
	}
	ops := kinds[kindOf(0, last.PP)].first.layer
	var ts []configs.OpTime
	tabledColls := 0 // collectives the table prices: their terms are the table's time
	for i, op := range ops {
		if coll := op.Kind == partition.AllReduce || op.Kind == partition.AllGather; coll && tabledColls == 0 {
			kind, shape, size, ctx := OpKey(&op)
			ts = append(ts, opTimes(kind, shape, [3]float64{float64(size), float64(ctx), 3e-5})...)
			tabledColls++
		}
		if reusable(&op) && i%2 == 0 {
			kind, shape, size, ctx := OpKey(&op)
			ts = append(ts, opTimes(kind, shape, [3]float64{float64(size), float64(ctx), 1e-4 * float64(i+1)})...)
		}
	}
	cfg := *last.Config
	cfg.Hardware.OpTimes = ts
	withTable := *last
	withTable.Config = &cfg
	c.reset(quickID{model: withTable.Model, context: cfg.Workload.Context, output: cfg.Workload.OutputTokens, sys: withTable.System})
	before := tabled
	check(c, &withTable, ops, nil, partition.Prefill, nil)
	if compared < 100000 || weights < 500 || tabled == before || len(ts) == 0 || tabledColls == 0 || around < 1000 {
		t.Fatalf("%d prices compared, %d terms of reusable weights, %d priced by the table, %d ops around the layer: too few to test", compared, weights, tabled-before, around)
	}
	t.Logf("%d prices compared, %d terms of reusable weights, %d priced by the table, %d ops around the layer", compared, weights, tabled-before, around)
}

// withReset is c reset for p's model, workload and system.
func (c *QuickCache) withReset(p *partition.Plan) *QuickCache {
	c.reset(quickID{model: p.Model, context: p.Config.Workload.Context, output: p.Config.Workload.OutputTokens, sys: p.System})
	return c
}

// carve hands out lists that never overlap and stay put: 40 lists of 1 to
// 9 ints from blocks of 16 (so most blocks end with room too short for the
// next list), each filled with its own number as it is carved; after all
// are carved, every list must be its length and capacity and still hold
// only its number, and have come zeroed. A carve that reused a block's
// room, or handed out a list with room past its end, fails it.
func TestCarveListsStayPut(t *testing.T) {
	var slab []int
	var lists [][]int
	for i := range 40 {
		n := 1 + i%9
		l := carve(&slab, n, 16)
		for j := range l {
			if l[j] != 0 {
				t.Fatalf("list %d came with %v", i, l)
			}
			l[j] = i + 1
		}
		if len(l) != n || cap(l) != n {
			t.Fatalf("list %d: length %d, capacity %d, want %d", i, len(l), cap(l), n)
		}
		lists = append(lists, l)
	}
	for i, l := range lists {
		for _, v := range l {
			if v != i+1 {
				t.Fatalf("list %d holds %v: another list wrote over it", i, l)
			}
		}
	}
	if l := carve(&slab, 40, 16); len(l) != 40 || cap(l) != 40 {
		t.Fatalf("a list longer than a block: length %d, capacity %d", len(l), cap(l))
	}
}
