package sim

import (
	"fmt"
	"math"
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
		c.keepOps = true                    // the layer's collectives are asked too
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

// Quick keeps a stage's cost and prefill sums for the next stages while
// their shape stays the same, comparing the parts of the key a plan's
// stages differ in. quickStageByStage is Quick as it was before: every
// stage's whole key built and compared, its sums asked for at every stage.
// For every fitting candidate of the 1,024-, 4,096- and 16,384-GPU searches
// and of the 16,384-GPU search at batch 16 and context 512, priced in
// search order, the two must give the same estimate, field for field.
func TestQuickRunsOfStagesAreStageByStage(t *testing.T) {
	plans := 0
	for _, tc := range quickSpecs(t) {
		spec := tc.spec
		c, ref := NewQuickCache(spec.Collectives), NewQuickCache(spec.Collectives)
		ref.keepChunks = true // every chunk kept, the sums taken from them per stage
		eachFittingPlan(spec, func(p *partition.Plan) {
			got, err := c.Quick(p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := quickStageByStage(ref, p)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%d GPUs %s: %+v, stage by stage %+v", tc.gpus, p.Config.Name, got, want)
			}
			plans++
		})
	}
	if plans < 500 {
		t.Fatalf("%d plans compared: too few to test", plans)
	}
}

func quickStageByStage(c *QuickCache, plan *partition.Plan) (QuickEstimate, error) {
	w := plan.Config.Workload
	id := quickID{model: plan.Model, context: w.Context, output: w.OutputTokens, sys: plan.System}
	if !c.have || c.id != id {
		c.reset(id)
	}
	pk := layoutOf(plan)
	kinds, err := c.proxy(plan, pk)
	if err != nil {
		return QuickEstimate{}, err
	}
	P, T, m := plan.PP, plan.TP, float64(plan.Microbatches)
	topo := plan.System.Topology
	C := plan.PrefillChunks
	nsv := 2*P - 1
	sv := make([]float64, 3*nsv)
	first, total, last := sv[:nsv:nsv], sv[nsv:2*nsv:2*nsv], sv[2*nsv:]
	var busyPrefill, roundTrip, slowest, busyDecode float64
	var crit *stageCost
	for s := 0; s < P; s++ {
		kind := kindOf(s, P)
		a := plan.RankOf(s, 0)
		var out uint8
		if P > 1 {
			out = outClasses(&topo, a, plan.RankOf((s+1)%P, 0), T)
		}
		key := stageKey{proxyKey: pk, kind: kind, layers: len(plan.StageLayers[s]), off: a % topo.GPUsPerNode, out: out}
		sc, err := c.stage(plan, key, kinds[kind], a, m)
		if err != nil {
			return QuickEstimate{}, err
		}
		A, X := sc.prefillSums(m, s != P-1)
		lastPass := sc.pre0(C - 1)
		if m > 1 {
			lastPass = sc.preN[C-1]
		}
		busyPrefill += A
		first[2*s], total[2*s], last[2*s] = sc.pre0(0), A, lastPass
		if s == P-1 {
			total[2*s] -= sc.tailS
			last[2*s] -= sc.tailS
		} else {
			first[2*s+1], total[2*s+1], last[2*s+1] = sc.preSend(0), X, sc.preSend(C-1)
		}
		roundTrip += sc.dec + sc.decSendS
		slowest = max(slowest, sc.dec, sc.decSendS)
		busyDecode += m * sc.dec
		if crit == nil || sc.dec > crit.dec {
			crit = sc
		}
	}
	var ttft, before float64
	after := 0.0
	for k := 1; k < nsv; k++ {
		after += last[k]
	}
	for k := 0; k < nsv; k++ {
		ttft = max(ttft, before+total[k]+after)
		before += first[k]
		if k+1 < nsv {
			after -= last[k+1]
		}
	}
	q := QuickEstimate{TTFTS: ttft, RoundTripS: roundTrip, BusiestS: m * slowest}
	q.TPOTS = max(q.RoundTripS, q.BusiestS)
	q.TokensPerS = float64(w.Batch*max(plan.DP, 1)) / q.TPOTS
	q.BubbleFraction = math.Max(0, 1-busyDecode/(float64(P)*q.TPOTS))
	q.PrefillBubbleFraction = math.Max(0, 1-busyPrefill/(float64(P)*ttft))
	var byBound [8]float64
	for i, t := range crit.decBounds {
		byBound[i] = m * t
	}
	byBound[boundIndex(BoundBubble)] = q.TPOTS - m*crit.dec
	q.Bottleneck, _ = argmaxBound(byBound)
	return q, nil
}
