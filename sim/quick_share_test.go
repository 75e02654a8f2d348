package sim

import (
	"slices"
	"testing"

	"github.com/partbench/partbench/partition"
)

// stage prices a stage shape's decode step once for the layouts that
// differ only in their prefill chunk (decCosts). Here every stage shape of
// two searches, priced in search order through one cache, is priced again
// by a cache of its own, where nothing was shared, and every time stage
// keeps must be equal to the bit.
func TestQuickSharedDecodeCostsAreEachShapesOwn(t *testing.T) {
	shapes, shared := 0, 0
	for _, gpus := range []int{4096, 16384} {
		spec := syntheticSpec(t, gpus)
		c := NewQuickCache(spec.Collectives)
		type at struct {
			plan  *partition.Plan
			first int
		}
		where := map[stageKey]at{}
		eachFittingPlan(spec, func(p *partition.Plan) {
			if _, err := c.Quick(p); err != nil {
				t.Fatal(err)
			}
			// The keys Quick gave this plan's stages, and each one's first rank.
			topo := p.System.Topology
			for s := 0; s < p.PP; s++ {
				a := p.RankOf(s, 0)
				var out uint8
				if p.PP > 1 {
					out = outClasses(&topo, a, p.RankOf((s+1)%p.PP, 0), p.TP)
				}
				key := stageKey{proxyKey: layoutOf(p), kind: kindOf(s, p.PP), layers: len(p.StageLayers[s]), off: a % topo.GPUsPerNode, out: out}
				if _, ok := where[key]; !ok {
					where[key] = at{p, a}
				}
			}
		})
		perDecode := map[stageKey]int{}
		for key, sc := range c.allStages() {
			w, ok := where[key]
			if !ok {
				t.Fatalf("%d GPUs: stage shape %+v priced for no stage", gpus, key)
			}
			own := NewQuickCache(spec.Collectives)
			own.keepChunks = true
			own.reset(c.id)
			kinds, err := own.proxy(w.plan, key.proxyKey)
			if err != nil {
				t.Fatal(err)
			}
			want, err := own.stage(w.plan, key, kinds[key.kind], w.first, float64(w.plan.Microbatches))
			if err != nil {
				t.Fatal(err)
			}
			// The shared cache keeps the sums stage took, the cache of its own
			// every chunk (keepChunks), summed here.
			wa, wx := want.prefillSums(sc.sums.m, sc.sums.send)
			if sc.preN != nil || sc.preLast != want.preN[len(want.preN)-1] || !sc.sums.ok || sc.sums.all != wa || sc.sums.x != wx || sc.ends0 != want.ends0 || sc.sendS != want.sendS ||
				sc.tailS != want.tailS || sc.dec != want.dec || sc.decBounds != want.decBounds || sc.decSendS != want.decSendS {
				t.Fatalf("%d GPUs %+v: priced through the shared cache\n%+v\nby a cache of its own\n%+v", gpus, key, *sc, *want)
			}
			dk := key
			dk.chunk = 0
			perDecode[dk]++
			shapes++
		}
		for _, n := range perDecode {
			shared += n - 1 // shapes that read another's decode cost
		}
	}
	if shapes < 100 || shared < 20 {
		t.Fatalf("%d stage shapes, %d of them sharing a decode cost: too few to test", shapes, shared)
	}
	t.Logf("%d stage shapes, %d sharing another's decode cost", shapes, shared)
}

// equalFloats says whether a and b hold the same values, to the bit but for
// NaN's payload.
func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && (a[i] == a[i] || b[i] == b[i]) {
			return false
		}
	}
	return true
}

// workingSetOfPass is workingSet of the pass's ops joined in one Program.
// Every decode step and first and last prefill pass of every stage kind of
// the layouts of three searches must give the same bytes both ways.
func TestWorkingSetOfPassIsWorkingSet(t *testing.T) {
	n, nonzero := 0, 0
	for _, gpus := range []int{16, 4096, 16384} {
		spec := syntheticSpec(t, gpus)
		c := NewQuickCache(spec.Collectives)
		c.keepOps = true // the passes' layer ops too
		eachFittingPlan(spec, func(p *partition.Plan) {
			if _, err := c.Quick(p); err != nil {
				t.Fatal(err)
			}
		})
		for pk, kinds := range c.passes {
			for kind, k := range kinds {
				if k == nil {
					continue
				}
				for _, p := range []*passOps{&k.first, &k.last, &k.decode} {
					want := workingSet(partition.Program{Ops: slices.Concat(p.pre, p.layer, p.post)})
					if got := workingSetOfPass(p); got != want {
						t.Fatalf("%d GPUs %+v kind %d: workingSetOfPass %d, workingSet %d", gpus, pk, kind, got, want)
					}
					if want > 0 {
						nonzero++
					}
					n++
				}
			}
		}
	}
	if n < 100 || nonzero < n/2 {
		t.Fatalf("%d passes, %d with a working set: too few to test", n, nonzero)
	}
}
