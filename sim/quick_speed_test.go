package sim

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// Quick prices the prefill chunks between the first and the last from the
// first chunk's ops with the attention moved (middleChunks) instead of
// building them. Here every chunk of every stage shape a search priced is
// built (the proxy plan's whole prefill Program, split by chunk) and summed
// op by op as stage sums a pass: the times must be equal to the bit. The
// searches chunk the prefill into up to 480 passes.
func TestQuickMiddleChunksEqualBuiltChunks(t *testing.T) {
	spec := syntheticSpec(t, 4096)
	c, plans := pricedLayouts(t, spec)
	if len(plans) == 0 {
		t.Fatal("no candidate fits")
	}
	checked, maxChunks := 0, 0
	proxies := map[proxyKey]*partition.Plan{}
	for key, sc := range c.allStages() {
		C := len(sc.preN)
		maxChunks = max(maxChunks, C)
		if C < 3 {
			continue
		}
		plan := plans[key.proxyKey]
		pp := proxies[key.proxyKey]
		if pp == nil {
			var err error
			if pp, err = proxyPlan(plan, key.proxyKey); err != nil {
				t.Fatal(err)
			}
			proxies[key.proxyKey] = pp
		}
		s := 0
		for kindOf(s, pp.PP) != key.kind {
			s++
		}
		ops := pp.Program(pp.RankOf(s, 0), partition.Prefill).Ops
		k := (*c.passes[key.proxyKey])[key.kind]
		res := 1.0
		if ws := int64(key.layers)*k.layerWS + k.extraWS; ws > 0 {
			res = math.Min(1, float64(plan.System.GPU.UsableL2Bytes())/float64(ws))
		}
		start := 0
		for ch := 0; ch < C; ch++ {
			end := start
			for end < len(ops) && ops[end].Chunk == ch {
				end++
			}
			p := splitPass(ops[start:end])
			start = end
			if send := c.sendTime(plan, sendBytes(p.post), key.out); sc.preSend(ch) != send {
				t.Fatalf("%+v chunk %d of %d: send %v, built %v", key, ch, C, sc.preSend(ch), send)
			}
			if ch == 0 || ch == C-1 {
				continue
			}
			var want float64
			for _, part := range []struct {
				ops  []partition.Op
				mult float64
			}{{p.pre, 1}, {p.layer, float64(key.layers)}, {p.post, 1}} {
				for i := range part.ops {
					ot, _, err := c.opTime(plan, &part.ops[i], res, false, key.off, key.tp, partition.Prefill)
					if err != nil {
						t.Fatal(err)
					}
					want += part.mult * ot
				}
			}
			if sc.preN[ch] != want || sc.pre0(ch) != want {
				t.Fatalf("%+v chunk %d of %d: priced %v (first touch %v), built %v", key, ch, C, sc.preN[ch], sc.pre0(ch), want)
			}
			checked++
		}
	}
	if checked == 0 || maxChunks < 100 {
		t.Fatalf("checked %d middle chunks, at most %d chunks a stage: the search no longer chunks the prefill enough to test", checked, maxChunks)
	}
	t.Logf("%d middle chunks of %d stage shapes, up to %d chunks", checked, len(c.allStages()), maxChunks)
}

// outClasses looks at GPUsPerNode indices at most; here it is held to the
// classes of every index's send, over nodes of 1 to 8 GPUs and every
// placement of two groups within three nodes.
func TestOutClassesLooksAtEveryIndex(t *testing.T) {
	for _, g := range []int{1, 2, 3, 8} {
		topo := topology.Topology{Nodes: 64, GPUsPerNode: g}
		for src := 0; src < 3*g; src++ {
			for dst := 0; dst < 3*g; dst++ {
				for tp := 1; tp <= 3*g; tp++ {
					var want uint8
					for i := 0; i < tp; i++ {
						if (src+i)/g == (dst+i)/g {
							want |= 1
						} else {
							want |= 2
						}
					}
					if got := outClasses(&topo, src, dst, tp); got != want {
						t.Fatalf("nodes of %d, %d → %d, tp %d: classes %b, every index %b", g, src, dst, tp, got, want)
					}
				}
			}
		}
	}
}

// The collective memo keys a group by shapeOf; Collective reads a group
// through analyze. Both must see the same group, on every subset of ranks
// 0–11 over nodes of 1, 2, 3, 4 and 5 GPUs (ascending, as the plan's groups
// are); an unsorted or out-of-range list is not memoised (ok false).
func TestShapeOfIsWhatAnalyzeSees(t *testing.T) {
	for _, g := range []int{1, 2, 3, 4, 5} {
		topo := topology.Topology{Nodes: 12, GPUsPerNode: g}
		for set := 1; set < 1<<12; set++ {
			var ranks []int
			for r := 0; r < 12; r++ {
				if set&(1<<r) != 0 {
					ranks = append(ranks, r)
				}
			}
			a := analyze(topo, ranks)
			want := collShape{n: a.n, nodes: a.nodes, minPer: a.minPer, maxPer: a.maxPer, ok: true}
			if got := shapeOf(&topo, ranks); got != want {
				t.Fatalf("nodes of %d, ranks %v: shape %+v, analyze %+v", g, ranks, got, want)
			}
		}
		for _, bad := range [][]int{{3, 1}, {2, 2}, {0, 200}, {-1, 0}, nil} {
			if sh := shapeOf(&topo, bad); sh.ok {
				t.Errorf("ranks %v: shape %+v, want not ok", bad, sh)
			}
		}
	}
}

// Candidate.Name builds its string without fmt; the names are the ones
// documented on it, and over a range of layouts the ones fmt gives.
func TestCandidateName(t *testing.T) {
	for _, tc := range []struct {
		c    Candidate
		want string
	}{
		{Candidate{TP: 8, PP: 2, DP: 1, Microbatches: 8, Variant: VariantEven}, "tp8pp2-m8"},
		{Candidate{TP: 4, PP: 4, Microbatches: 16, Variant: VariantFirst}, "tp4pp4-m16-first-1"},
		{Candidate{TP: 8, PP: 1, DP: 2, Microbatches: 8, Variant: VariantEven}, "tp8pp1dp2-m8"},
		{Candidate{TP: 128, PP: 16, DP: 2, Microbatches: 16, Variant: VariantEnds}, "tp128pp16dp2-m16-ends-1"},
	} {
		if got := tc.c.Name(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
	for tp := 1; tp <= 1024; tp *= 4 {
		for dp := 0; dp <= 3; dp++ {
			for _, v := range []string{VariantEven, VariantLast} {
				c := Candidate{TP: tp, PP: 3 * tp, DP: dp, Microbatches: tp + 1, Variant: v}
				want := fmt.Sprintf("tp%dpp%d", tp, 3*tp)
				if dp > 1 {
					want += fmt.Sprintf("dp%d", dp)
				}
				want += fmt.Sprintf("-m%d", tp+1)
				if v != VariantEven {
					want += "-" + v
				}
				if got := c.Name(); got != want {
					t.Errorf("%+v: %q, want %q", c, got, want)
				}
			}
		}
	}
}

// placeFree is op without what says where it runs and which layer it is
// (layer index, name, peer, the ranks of its group but their count), none
// of which Quick reads.
func placeFree(op partition.Op) partition.Op {
	op.Layer, op.Name, op.Peer = min(op.Layer, 0), "", 0
	op.Group = make([]int, len(op.Group))
	return op
}

// aroundAsBuilt says whether a, a pass of a QuickCache, holds a term for
// each op around the layer of b, the same pass built, and b's sends'
// payload: what stage prices the ops around the layer from (the terms'
// values are TestOpTermsAreOpTime's).
func aroundAsBuilt(a, b passOps) error {
	if len(a.preT) != len(b.pre) || len(a.postT) != len(b.post) {
		return fmt.Errorf("%d and %d terms around the layer, built %d and %d ops", len(a.preT), len(a.postT), len(b.pre), len(b.post))
	}
	if want := sendBytes(b.post); a.sendBytes != want {
		return fmt.Errorf("sends of %d bytes, built %d", a.sendBytes, want)
	}
	return nil
}

func samePassUpToPlace(a, b passOps) error {
	for i, part := range [][2][]partition.Op{{a.pre, b.pre}, {a.layer, b.layer}, {a.post, b.post}} {
		if len(part[0]) != len(part[1]) {
			return fmt.Errorf("part %d: %d ops, built %d", i, len(part[0]), len(part[1]))
		}
		for j := range part[0] {
			if x, y := placeFree(part[0][j]), placeFree(part[1][j]); !reflect.DeepEqual(x, y) {
				return fmt.Errorf("part %d op %d: %+v, built %+v", i, j, x, y)
			}
		}
	}
	if a.tail != b.tail {
		return fmt.Errorf("tail %d, built %d", a.tail, b.tail)
	}
	return nil
}

// Quick's proxy does not build a three-stage proxy's middle stage: it takes
// the last stage's recv, the first stage's layer and send; and the last
// stage builds only the ops around the first stage's layer. Here the middle
// and last stages are built for every layout of searches over five models — the
// synthetic dense model chunking its prefill up to 480 times, Llama-2-13B
// (untied embedding and LM head), GPT-2 XL (biases, learned positions,
// LayerNorm), the seed model, GPT-2 tiny — and their first and last prefill
// passes, decode steps and working sets must equal the proxy's but for
// layer indices, names and peers. The stage kinds also share the attention
// times of the middle chunks, so every kind's layer ops must be the same.
func TestQuickProxyStagesAreBuiltStages(t *testing.T) {
	var specs []SearchSpec
	spec := syntheticSpec(t, 4096)
	specs = append(specs, spec)
	for _, name := range []string{"llama2-13b-2k", "gpt2-xl-prefill", "tp8pp2", "tiny-gpt2-a100"} {
		cfg, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, SearchSpec{Config: cfg, System: topology.System{GPU: cfg.Hardware.GPU, Topology: cfg.Topology.Topology}})
	}
	middles := 0
	for _, spec := range specs {
		c, plans := pricedLayouts(t, spec)
		for pk, kinds := range c.passes {
			if pk.pp != 3 {
				continue
			}
			pp, err := proxyPlan(plans[pk], pk)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []int{1, 2} { // the middle and last stages
				r := pp.RankOf(s, 0)
				got := kinds[kindOf(s, 3)]
				first := splitPass(pp.PrefillPass(r, 0, 0))
				last := first
				if pp.PrefillChunks > 1 {
					last = splitPass(pp.PrefillPass(r, 0, pp.PrefillChunks-1))
				}
				dec := pp.Program(r, partition.Decode)
				d := splitPass(dec.Ops)
				layerWS := workingSet(partition.Program{Ops: d.layer})
				for _, c := range []struct {
					what      string
					got, want passOps
				}{{"first prefill pass", got.first, first}, {"last prefill pass", got.last, last}, {"decode step", got.decode, d}} {
					if err := samePassUpToPlace(c.got, c.want); err != nil {
						t.Fatalf("%s %+v stage %d, %s: %v", spec.Config.Name, pk, s, c.what, err)
					}
					if err := aroundAsBuilt(c.got, c.want); err != nil {
						t.Fatalf("%s %+v stage %d, %s: %v", spec.Config.Name, pk, s, c.what, err)
					}
				}
				if got.layerWS != layerWS || got.extraWS != workingSet(dec)-layerWS {
					t.Fatalf("%s %+v stage %d: working sets %d + %d, built %d + %d", spec.Config.Name, pk, s, got.layerWS, got.extraWS, layerWS, workingSet(dec)-layerWS)
				}
			}
			got := kinds[kindMiddle]
			for _, k := range []stageKind{kindFirst, kindLast} {
				for _, p := range [][2]passOps{{kinds[k].first, got.first}, {kinds[k].last, got.last}, {kinds[k].decode, got.decode}} {
					a, b := p[0], p[1]
					a.pre, a.post, b.pre, b.post, a.tail, b.tail = nil, nil, nil, nil, 0, 0
					if err := samePassUpToPlace(a, b); err != nil {
						t.Fatalf("%s %+v: kind %d's layer differs from the middle's: %v", spec.Config.Name, pk, k, err)
					}
				}
				if kinds[k].attn != got.attn {
					t.Fatalf("%s %+v: kind %d does not share the layout's attention times", spec.Config.Name, pk, k)
				}
			}
			middles++
		}
	}
	if middles < 10 {
		t.Fatalf("checked %d three-stage proxies: too few to test", middles)
	}
	t.Logf("%d three-stage proxies", middles)
}

// stage prices a prefill pass with and without first touch in one walk
// (passBoth). Here every stage shape of two searches is priced again the
// way it was before, one walk per variant, and the first and last chunks'
// times must be equal to the bit.
func TestQuickFirstTouchVariantsInOneWalk(t *testing.T) {
	shapes := 0
	for _, gpus := range []int{4096, 16384} {
		spec := syntheticSpec(t, gpus)
		c, plans := pricedLayouts(t, spec)
		for key, sc := range c.allStages() {
			plan, k := plans[key.proxyKey], (*c.passes[key.proxyKey])[key.kind]
			res := 1.0
			if ws := int64(key.layers)*k.layerWS + k.extraWS; ws > 0 {
				res = math.Min(1, float64(plan.System.GPU.UsableL2Bytes())/float64(ws))
			}
			walk := func(p *passOps, layerFirst, postFirst bool) float64 {
				var sum float64
				for _, part := range []struct {
					ops   []partition.Op
					mult  float64
					first bool
				}{{p.pre, 1, false}, {p.layer, float64(key.layers), layerFirst}, {p.post, 1, postFirst}} {
					for i := range part.ops {
						ot, _, err := c.opTime(plan, &part.ops[i], res, part.first, key.off, key.tp, partition.Prefill)
						if err != nil {
							t.Fatal(err)
						}
						sum += part.mult * ot
					}
				}
				return sum
			}
			C := k.chunks
			for _, ch := range []int{0, C - 1} {
				p := &k.first
				if ch == C-1 {
					p = &k.last
				}
				if n, f := walk(p, false, false), walk(p, ch == 0, ch == C-1); sc.preN[ch] != n || sc.pre0(ch) != f {
					t.Fatalf("%d GPUs %+v chunk %d of %d: priced %v and %v with first touch, walked %v and %v", gpus, key, ch, C, sc.preN[ch], sc.pre0(ch), n, f)
				}
			}
			shapes++
		}
	}
	if shapes < 100 {
		t.Fatalf("%d stage shapes: too few to test", shapes)
	}
	t.Logf("%d stage shapes", shapes)
}

// A QuickCache reuses proxies, stage costs and their prefill sums across
// plans. Every candidate that fits in two searches, priced in search order
// through one cache, must get the estimate a cache of its own gives it,
// field for field.
func TestQuickCacheGivesFreshEstimates(t *testing.T) {
	n := 0
	for _, gpus := range []int{4096, 16384} {
		spec := syntheticSpec(t, gpus)
		c := NewQuickCache(spec.Collectives)
		eachFittingPlan(spec, func(p *partition.Plan) {
			got, err := c.Quick(p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := NewQuickCache(spec.Collectives).Quick(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%d GPUs, %s: shared cache %+v, own cache %+v", gpus, p.Config.Name, got, want)
			}
			n++
		})
	}
	if n < 200 {
		t.Fatalf("%d candidates fit: too few to test", n)
	}
}

// proxy builds a layout's prefill passes in a slice of the length the
// passes had in the last layout of the same TP degree, micro-batch size and
// depth, or else of the builder's bound on a pass (passBuf). Every layout
// of the 4,096- and 16,384-GPU searches, built in order through one cache,
// must keep the same ops, pass for pass and stage kind for stage kind, as
// the layout built alone through a fresh cache (which has no length to go
// by), and the shared cache must have built some in a slice of the
// remembered length (else this compares the bound's slices with
// themselves). Both with the ops kept (keepOps) and without: then the
// terms of the ops around the layer (setAround), worked out in the cache's
// scratch, must be those built alone, their collectives by what they are.
func TestQuickProxyPassesBuiltInPlaceAreBuiltAlone(t *testing.T) {
	inPlace, layouts := 0, 0
	for _, tc := range []struct {
		gpus int
		keep bool
	}{{4096, true}, {16384, true}, {4096, false}, {16384, false}} {
		gpus := tc.gpus
		spec := syntheticSpec(t, gpus)
		c := NewQuickCache(spec.Collectives)
		c.keepOps = tc.keep
		eachFittingPlan(spec, func(p *partition.Plan) {
			pk := layoutOf(p)
			_, seen := c.passes[pk]
			n := 0
			if d := c.decodes[proxyKey{tp: pk.tp, mbs: pk.mbs, pp: pk.pp}]; d != nil {
				n = d[kindOf(0, pk.pp)].prefillOps[b2i(p.PrefillChunks > 1)]
			}
			if _, err := c.Quick(p); err != nil {
				t.Fatal(err)
			}
			if seen {
				return
			}
			layouts++
			alone := NewQuickCache(spec.Collectives)
			alone.keepOps = tc.keep
			if _, err := alone.Quick(p); err != nil {
				t.Fatal(err)
			}
			got, want := c.passes[pk], alone.passes[pk]
			for k := range got {
				if (got[k] == nil) != (want[k] == nil) {
					t.Fatalf("%d GPUs, %s %+v: stage kind %d built %v, alone %v", gpus, p.Config.Name, pk, k, got[k] != nil, want[k] != nil)
				}
				if got[k] == nil {
					continue
				}
				g, w := *got[k], *want[k]
				g.attn, w.attn = nil, nil // each cache's own attention times, filled later
				// and each cache's own stage shapes and decode costs, priced later
				g.shapes, w.shapes, g.decOps, w.decOps = nil, nil, nil, nil
				// The terms, their collectives by what they are, not by
				// their place in each cache's list.
				if !reflect.DeepEqual(kindTerms(c, &g), kindTerms(alone, &w)) {
					t.Fatalf("%d GPUs, %s %+v: stage kind %d's terms differ from the layout built alone", gpus, p.Config.Name, pk, k)
				}
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("%d GPUs, %s %+v: stage kind %d's passes differ from the layout built alone", gpus, p.Config.Name, pk, k)
				}
			}
			k := got[kindOf(0, pk.pp)]
			built := len(k.first.pre) + len(k.first.layer) + len(k.first.post)
			if p.PrefillChunks > 1 {
				built += len(k.last.pre) + len(k.last.layer) + len(k.last.post)
			}
			if tc.keep && n > 0 && built == n {
				inPlace++ // the first stage's passes filled the slice passBuf sized
			}
		})
	}
	if layouts < 100 || inPlace < 30 {
		t.Fatalf("%d layouts, %d built in place: too few to test", layouts, inPlace)
	}
}

// QuickCache works out a collective's group (its checks, the options'
// algorithms and protocols, the nodes it spans and its members on each:
// newCollectiveGroup) once per shape — op, size, first rank modulo the GPUs
// per node — and prices every group of that shape from it. For every
// collective of every stage's TP group of every fitting candidate of the
// 4,096- and 16,384-GPU searches, at every size the layout's passes send,
// the cache's estimate must equal programCollective's for that group alone,
// field for field and error for error, under the default options, a forced
// ring, protocols but LL128, NVLS alone (refused where a group spans
// nodes), and a GPU with the runtime's custom all-reduce.
func TestQuickCollectiveGroupsByShapeAreCollective(t *testing.T) {
	type seenKey struct {
		kind      partition.Kind
		tp, first int
		bytes     int64
	}
	compared, reused, refused := 0, 0, 0
	for _, gpus := range []int{4096, 16384} {
		spec := syntheticSpec(t, gpus)
		priced := NewQuickCache(spec.Collectives) // the layouts' passes
		priced.keepOps = true                     // with their layer ops
		var plans []*partition.Plan
		eachFittingPlan(spec, func(p *partition.Plan) {
			if _, err := priced.Quick(p); err != nil {
				t.Fatal(err)
			}
			plans = append(plans, p)
		})
		custom := spec.System
		custom.GPU.AllReduce, custom.GPU.CustomAllReduceMaxBytes, custom.GPU.CustomAllReduceFixedS = topology.AllReduceCustom, 8<<20, 5e-6
		for _, c := range []struct {
			sys  topology.System
			opts CollectiveOptions
		}{{spec.System, CollectiveOptions{}}, {spec.System, CollectiveOptions{Algo: "ring"}}, {spec.System, CollectiveOptions{Proto: "^LL128"}},
			{spec.System, CollectiveOptions{Algo: "nvls"}}, {custom, CollectiveOptions{}}} {
			qc := NewQuickCache(c.opts)
			qc.reset(quickID{sys: c.sys})
			seen := map[seenKey]bool{}
			for _, p := range plans {
				kinds := priced.passes[layoutOf(p)]
				for s := 0; s < p.PP; s++ {
					first := p.RankOf(s, 0)
					group := make([]int, p.TP)
					for i := range group {
						group[i] = first + i
					}
					k := kinds[kindOf(s, p.PP)]
					for _, pass := range []passOps{k.first, k.last, k.decode} {
						for _, ops := range [][]partition.Op{pass.pre, pass.layer, pass.post} {
							for _, op := range ops {
								cop, ok := op.Kind.Comm()
								if !ok || !cop.Collective() {
									continue
								}
								sk := seenKey{op.Kind, p.TP, first, op.Bytes}
								if seen[sk] {
									continue
								}
								seen[sk] = true
								gk := collGroupKey{op: op.Kind, tp: p.TP, off: first % c.sys.Topology.GPUsPerNode}
								_, had := qc.groups[gk]
								got, gerr := qc.programCollective(c.sys, cop, gk, group, op.Bytes)
								want, werr := programCollective(c.sys, cop, group, op.Bytes, c.opts)
								if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
									t.Fatalf("%d GPUs, %+v, %s on ranks %d…%d, %d B: by shape %+v (%v), alone %+v (%v)", gpus, c.opts, cop, first, first+p.TP-1, op.Bytes, got, gerr, want, werr)
								}
								compared++
								if had {
									reused++
								}
								if werr != nil {
									refused++
								}
							}
						}
					}
				}
			}
		}
	}
	if compared < 1000 || reused < compared/2 || refused == 0 {
		t.Fatalf("%d groups and sizes compared, %d from a shape worked out before, %d refused: too few to test", compared, reused, refused)
	}
}

// QuickCache plans a layout's proxy through a partition.Planner per TP
// degree, micro-batch size and proxy depth, without the memory fit
// (Layout), and rechunks the group's plan for its later layouts. For
// every fitting candidate of the 4,096- and 16,384-GPU searches, in
// search order through one cache, the proxy plan must equal
// (reflect.DeepEqual) the one NewPlanStages plans alone in every field but
// StageMemory, which a proxy does not work out, and every pass proxy
// builds from it (the first and
// the last prefill chunk of each of its stages, whole and around the
// layer, and its decode step) must equal that plan's; a proxy plan's
// error (or none) must be the one planned alone, for a layout whose chunk
// the proxy cannot have (a plan claiming one prefill chunk more) and for a
// chunk out of range (a plan's chunk set to 0 or past the prompt, which
// Rechunk refuses and the Planner plans).
func TestQuickProxyPlansArePlannedAlone(t *testing.T) {
	plans, reused, memDiffers, refused := 0, 0, 0, 0
	for _, gpus := range []int{4096, 16384} {
		spec := syntheticSpec(t, gpus)
		// c plans the search's proxies in search order; cb the bad plans',
		// which replan a group's plan.
		c, cb := NewQuickCache(spec.Collectives), NewQuickCache(spec.Collectives)
		eachFittingPlan(spec, func(p *partition.Plan) {
			for _, c := range []*QuickCache{c, cb} {
				if !c.have {
					c.reset(quickID{model: p.Model, context: p.Config.Workload.Context, output: p.Config.Workload.OutputTokens, sys: p.System})
				}
			}
			pk := layoutOf(p)
			_, had := c.planners[proxyKey{tp: pk.tp, mbs: pk.mbs, pp: pk.pp}]
			got, gerr := c.proxyPlan(p, pk)
			want, werr := proxyPlan(p, pk)
			if _, err := cb.proxyPlan(p, pk); fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("%d GPUs, %s %+v: by the cache of bad plans %v, alone %v", gpus, p.Config.Name, pk, err, werr)
			}
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || (got == nil) != (want == nil) {
				t.Fatalf("%d GPUs, %s %+v: by the cache's Planner %+v (%v), alone %+v (%v)", gpus, p.Config.Name, pk, got, gerr, want, werr)
			}
			if got != nil {
				g := *got
				if !reflect.DeepEqual(g.StageMemory, want.StageMemory) {
					memDiffers++
				}
				g.StageMemory = want.StageMemory
				if !reflect.DeepEqual(&g, want) {
					t.Fatalf("%d GPUs, %s %+v: by the cache's Planner %+v, alone %+v", gpus, p.Config.Name, pk, &g, want)
				}
				for s := 0; s < pk.pp; s++ {
					r := want.RankOf(s, 0)
					for _, ch := range []int{0, want.PrefillChunks - 1} {
						if a, b := got.PrefillPass(r, 0, ch), want.PrefillPass(r, 0, ch); !reflect.DeepEqual(a, b) {
							t.Fatalf("%d GPUs, %s %+v stage %d chunk %d: pass of the cache's proxy %d ops, alone %d", gpus, p.Config.Name, pk, s, ch, len(a), len(b))
						}
						a, at := got.PassAround(r, partition.Prefill, 0, ch)
						b, bt := want.PassAround(r, partition.Prefill, 0, ch)
						if at != bt || !reflect.DeepEqual(a, b) {
							t.Fatalf("%d GPUs, %s %+v stage %d chunk %d: around the layer, the cache's proxy differs", gpus, p.Config.Name, pk, s, ch)
						}
					}
					if a, b := got.Program(r, partition.Decode), want.Program(r, partition.Decode); !reflect.DeepEqual(a, b) {
						t.Fatalf("%d GPUs, %s %+v stage %d: decode step of the cache's proxy differs", gpus, p.Config.Name, pk, s)
					}
				}
			}
			for _, bad := range []func(b *partition.Plan){
				func(b *partition.Plan) { b.PrefillChunks++ },
				func(b *partition.Plan) { b.PrefillChunk = 0 },
				func(b *partition.Plan) { b.PrefillChunk = b.Config.Workload.PromptTokens() + 1 },
			} {
				b := *p
				bad(&b)
				bk := layoutOf(&b)
				_, gerr = cb.proxyPlan(&b, bk)
				_, werr = proxyPlan(&b, bk)
				if gerr != nil {
					refused++
				}
				if fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Fatalf("%d GPUs, %s %+v: a bad plan's proxy by the cache's Planner %v, alone %v", gpus, p.Config.Name, bk, gerr, werr)
				}
			}
			plans++
			if had {
				reused++
			}
		})
	}
	if plans < 200 || reused < 100 || memDiffers < plans || refused < plans {
		t.Fatalf("%d proxy plans, %d from a Planner used before, %d with a memory of their own, %d bad plans refused: too few to test", plans, reused, memDiffers, refused)
	}
}

// resolvedTerm is a term with the collective it indexes in its cache's
// list (opTerms.coll) in place of the index, which differs between caches.
type resolvedTerm struct {
	opTerms
	co collOp
}

// kindTerms takes k's terms out of k (its passes' around the layer, its
// decode step's layer's) and gives them resolved (resolvedTerm), in order.
func kindTerms(c *QuickCache, k *kindOps) [][]resolvedTerm {
	var out [][]resolvedTerm
	add := func(ts []opTerms) {
		r := make([]resolvedTerm, len(ts))
		for i, t := range ts {
			r[i].opTerms = t
			if t.kind == termsColl {
				r[i].co, r[i].coll = c.collOps[t.coll], 0
			}
		}
		out = append(out, r)
	}
	for _, p := range []*passOps{&k.first, &k.last, &k.decode} {
		add(p.preT)
		add(p.postT)
		p.preT, p.postT = nil, nil
	}
	if k.decTerms != nil {
		add(*k.decTerms)
		k.decTerms = nil
	}
	return out
}
