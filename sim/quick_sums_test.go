package sim

import (
	"testing"

	"github.com/partbench/partbench/partition"
)

// stage takes a shape's prefill sums for the plan's micro-batch count and
// keeps only the last chunk's time, not every chunk's (QuickCache.preN is
// its scratch). Here every stage of every fitting plan of two searches is
// priced through such a cache for the plan's micro-batch count m and then
// for m+1 and 2m+3 (micro-batch counts no shape was priced for: stage
// prices it again), and each answer — the sums over chunks, the last
// chunk's time — is held to a cache that keeps every chunk and sums them
// (prefillSums over preN, as Quick summed before): equal to the bit.
func TestQuickStageSumsWithoutChunksAreSumsOverChunks(t *testing.T) {
	asked, multi := 0, 0
	for _, gpus := range []int{1024, 16384} {
		spec := syntheticSpec(t, gpus)
		c, kept := NewQuickCache(spec.Collectives), NewQuickCache(spec.Collectives)
		kept.keepChunks = true
		eachFittingPlan(spec, func(p *partition.Plan) {
			for _, qc := range []*QuickCache{c, kept} {
				if _, err := qc.Quick(p); err != nil { // sets the cache's id and proxies
					t.Fatal(err)
				}
			}
			pk := layoutOf(p)
			topo := p.System.Topology
			m0 := float64(p.Microbatches)
			for s := 0; s < p.PP; s++ {
				a := p.RankOf(s, 0)
				var out uint8
				if p.PP > 1 {
					out = outClasses(&topo, a, p.RankOf((s+1)%p.PP, 0), p.TP)
				}
				kind := kindOf(s, p.PP)
				key := stageKey{proxyKey: pk, kind: kind, layers: len(p.StageLayers[s]), off: a % topo.GPUsPerNode, out: out}
				send := s != p.PP-1
				for _, m := range []float64{m0, m0 + 1, 2*m0 + 3} {
					got, err := c.stage(p, key, (*c.passes[pk])[kind], a, m)
					if err != nil {
						t.Fatal(err)
					}
					want, err := kept.stage(p, key, (*kept.passes[pk])[kind], a, m)
					if err != nil {
						t.Fatal(err)
					}
					if got.preN != nil {
						t.Fatalf("%d GPUs %+v: %d chunk times kept", gpus, key, len(got.preN))
					}
					C := len(want.preN)
					if C > 2 {
						multi++
					}
					ga, gx := got.prefillSums(m, send)
					wa, wx := want.prefillSums(m, send)
					if ga != wa || gx != wx || got.preLast != want.preN[C-1] || got.ends0 != want.ends0 || got.sendS != want.sendS {
						t.Fatalf("%d GPUs %+v m=%v: sums %v %v, last chunk %v; over every chunk %v %v, %v", gpus, key, m, ga, gx, got.preLast, wa, wx, want.preN[C-1])
					}
					asked++
				}
			}
		})
	}
	// Hand count: each search has well over a hundred fitting plans of
	// two or more stages, each asked three times.
	if asked < 1000 || multi < 100 {
		t.Fatalf("%d stages asked, %d of more than two chunks: too few to test", asked, multi)
	}
}
