package sim

import (
	"fmt"
	"testing"

	"github.com/partbench/partbench/partition"
)

// opsWorkingSet scans a short list of the tensors seen instead of a map.
// It must give workingSet's bytes for the Program holding its three slices
// in order: on every pass and decode step of the proxies of two searches
// (one layer, split where the cache splits them), and on whole stages of
// tp8pp2 — eight layers, more reusable tensors than the list holds on the
// stack —, once and twice over (every tensor seen twice), cut into three
// slices at several places.
func TestOpsWorkingSetIsWorkingSet(t *testing.T) {
	checked := 0
	check := func(what string, a, b, c []partition.Op) {
		t.Helper()
		all := append(append(append([]partition.Op(nil), a...), b...), c...)
		if got, want := opsWorkingSet(a, b, c), workingSet(partition.Program{Ops: all}); got != want {
			t.Fatalf("%s: %d bytes, workingSet %d", what, got, want)
		}
		checked++
	}
	for _, gpus := range []int{4096, 16384} {
		c, _ := pricedLayouts(t, syntheticSpec(t, gpus))
		for pk, kinds := range c.passes {
			for kind, k := range kinds {
				if k == nil {
					continue
				}
				for _, p := range []passOps{k.first, k.last, k.decode} {
					check(fmt.Sprintf("%d GPUs %+v kind %d", gpus, pk, kind), p.pre, p.layer, p.post)
				}
			}
		}
	}
	plan, err := partition.LoadPlan("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	wide := 0
	for _, r := range []int{0, plan.RankOf(1, 0)} {
		for _, phase := range []partition.Phase{partition.Prefill, partition.Decode} {
			ops := plan.Program(r, phase).Ops
			twice := append(append([]partition.Op(nil), ops...), ops...)
			for _, all := range [][]partition.Op{ops, twice} {
				if n := distinctReusable(all); n > 24 {
					wide++
				}
				for _, cut := range [][2]int{{0, 0}, {1, len(all) / 2}, {len(all) / 3, 2 * len(all) / 3}, {len(all), len(all)}} {
					check(fmt.Sprintf("tp8pp2 rank %d %v cut %v", r, phase, cut), all[:cut[0]], all[cut[0]:cut[1]], all[cut[1]:])
				}
			}
		}
	}
	if checked < 500 || wide == 0 {
		t.Fatalf("%d working sets checked, %d with more tensors than the list on the stack: too few to test", checked, wide)
	}
}

func distinctReusable(ops []partition.Op) int {
	seen := map[tensorKey]bool{}
	for i := range ops {
		if reusable(&ops[i]) {
			seen[tensorKey{ops[i].Layer, ops[i].Tensor}] = true
		}
	}
	return len(seen)
}

// QuickCache.collective answers the key it was last asked for from
// lastColl before its map. For every collective of every pass of every
// stage of every fitting candidate of the 4,096- and 16,384-GPU searches,
// asked in pass order (so the same key comes twice in a row, as a layer's
// two all-reduces ask it) through the cache that priced them, the answer
// must be the map's entry for the key and the one a cache that never saw
// it before works out.
func TestQuickCollectiveMemoIsTheMap(t *testing.T) {
	asked, hits := 0, 0
	for _, gpus := range []int{4096, 16384} {
		spec := syntheticSpec(t, gpus)
		c := NewQuickCache(spec.Collectives)
		alone := map[collCostKey]collCost{} // a fresh cache's answer per key
		eachFittingPlan(spec, func(p *partition.Plan) {
			if _, err := c.Quick(p); err != nil {
				t.Fatal(err)
			}
			kinds := c.passes[layoutOf(p)]
			for s := 0; s < p.PP; s++ {
				first := p.RankOf(s, 0)
				k := kinds[kindOf(s, p.PP)]
				for _, pass := range []passOps{k.first, k.last, k.decode} {
					for _, ops := range [][]partition.Op{pass.pre, pass.layer, pass.post} {
						for i := range ops {
							op := &ops[i]
							if op.Kind != partition.AllReduce && op.Kind != partition.AllGather {
								continue
							}
							key := collCostKey{op: op.Kind, bytes: op.Bytes, tp: p.TP, off: first % p.System.Topology.GPUsPerNode}
							if c.lastColl.ok && c.lastColl.key == key {
								hits++
							}
							got, err := c.collective(p, op, first, p.TP)
							if err != nil {
								t.Fatal(err)
							}
							want, ok := alone[key]
							if !ok {
								fresh := NewQuickCache(spec.Collectives)
								fresh.reset(c.id)
								if want, err = fresh.collective(p, op, first, p.TP); err != nil {
									t.Fatal(err)
								}
								alone[key] = want
							}
							if got != c.colls[key] || got != want {
								t.Fatalf("%d GPUs %s stage %d %s: %+v, map %+v, a fresh cache %+v", gpus, p.Config.Name, s, op.Name, got, c.colls[key], want)
							}
							asked++
						}
					}
				}
			}
		})
	}
	if asked < 1000 || hits < asked/4 || hits == asked {
		t.Fatalf("%d collectives asked, %d answered by the last key: too few to test", asked, hits)
	}
	t.Logf("%d collectives asked, %d answered by the last key", asked, hits)
}
