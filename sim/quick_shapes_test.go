package sim

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/partition"
)

// allStages is every stage shape the cache has priced, by its whole key:
// what the cache's map of stage costs held before the shapes moved onto
// their layouts' kinds (kindOps.shapes), for the tests that walk them.
func (c *QuickCache) allStages() map[stageKey]*stageCost {
	out := map[stageKey]*stageCost{}
	for pk, kinds := range c.passes {
		for kind, k := range kinds {
			if k == nil {
				continue
			}
			for _, e := range k.shapes {
				out[stageKey{proxyKey: pk, kind: stageKind(kind), layers: e.layers, off: e.off, out: e.out}] = e.sc
			}
		}
	}
	return out
}

// A cache prices a layout's prefill layer from its terms (a collective's
// holding its kind, payload and name: collOp) and copies of its attention
// ops (prefillTerms), and the ops around the layer from their terms too
// (setAround): every op is built in the cache's scratch and built over by
// the next layout. So it does a decode step (decodeSteps: the terms of its
// layer and of the ops around it). Every candidate that fits in
// four searches, priced in search order, must get the estimate, field for
// field, that a cache keeping every op (keepOps) gives it, and every stage
// shape the same cost; the layouts must include middle chunks (priced from
// the kept attention ops) and collectives among the layer's terms (priced
// from what their terms hold of them), else this tests nothing of either.
func TestQuickWithoutLayerOpsIsWithThem(t *testing.T) {
	plans, shapes, middles, colls := 0, 0, 0, 0
	for _, tc := range quickSpecs(t) {
		spec := tc.spec
		c, kept := NewQuickCache(spec.Collectives), NewQuickCache(spec.Collectives)
		kept.keepOps = true
		eachFittingPlan(spec, func(p *partition.Plan) {
			got, err := c.Quick(p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := kept.Quick(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%d GPUs, %s: without the layer ops %+v, with them %+v", tc.gpus, p.Config.Name, got, want)
			}
			plans++
		})
		all, allKept := c.allStages(), kept.allStages()
		if len(all) != len(allKept) {
			t.Fatalf("%d GPUs: %d stage shapes without the layer ops, %d with them", tc.gpus, len(all), len(allKept))
		}
		for key, sc := range all {
			want, ok := allKept[key]
			if !ok {
				t.Fatalf("%d GPUs: stage shape %+v priced only without the layer ops", tc.gpus, key)
			}
			if !reflect.DeepEqual(*sc, *want) {
				t.Fatalf("%d GPUs, stage shape %+v: without the layer ops %+v, with them %+v", tc.gpus, key, *sc, *want)
			}
			shapes++
		}
		for pk, kinds := range c.passes {
			k := kinds[kindOf(0, pk.pp)]
			if len(k.first.layer) != 0 || len(k.last.layer) != 0 {
				t.Fatalf("%d GPUs %+v: the layer ops were kept", tc.gpus, pk)
			}
			if k.chunks > 2 {
				middles++
			}
			for _, ts := range [][]opTerms{k.attn.first, k.attn.last} {
				for i := range ts {
					colls += b2i(ts[i].kind == termsColl)
				}
			}
		}
	}
	if plans < 300 || middles < 10 || colls < 10 {
		t.Fatalf("%d plans, %d stage shapes, %d layouts with middle chunks, %d collective terms: too few to test", plans, shapes, middles, colls)
	}
	t.Logf("%d plans, %d stage shapes, %d layouts with middle chunks, %d collective terms", plans, shapes, middles, colls)
}
