package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// This file is the closed-form estimator: Quick prices a plan by the
// pipeline law (fill, steady state, drain) from the same op costs, Collective
// and P2P the timeline uses, each stage shape costed once per QuickCache. It
// enumerates nothing; search.go ranks candidates by it. docs/search.md
// states the law and its tolerance against the full timeline.

// QuickEstimate is the closed-form estimate of a plan: op costs from the
// same computeCost, Collective and P2P the timeline uses, combined by the
// pipeline law instead of a discrete-event run.
type QuickEstimate struct {
	TTFTS      float64 `json:"ttft_s"`
	TPOTS      float64 `json:"tpot_s"`
	TokensPerS float64 `json:"tokens_per_s"`
	// BubbleFraction is the idle share of all ranks in a decode step;
	// PrefillBubbleFraction the same over prefill.
	BubbleFraction        float64 `json:"decode_bubble_fraction"`
	PrefillBubbleFraction float64 `json:"prefill_bubble_fraction"`
	// Bottleneck is what the busiest stage spends most of a decode step on.
	Bottleneck Bound `json:"bottleneck"`
	// RoundTripS is one micro-batch's decode trip through every stage and
	// link and back to the first stage; BusiestS is m times the slowest stage
	// or link. TPOT is the larger of the two (full-timeline values leave
	// both at 0).
	RoundTripS float64 `json:"round_trip_s,omitempty"`
	BusiestS   float64 `json:"busiest_s,omitempty"`
}

// Quick estimates a plan in closed form. It is what Search ranks by; use
// EstimatePlan for the discrete-event timeline.
func Quick(plan *partition.Plan, opts Options) (QuickEstimate, error) {
	return NewQuickCache(opts.Collectives).Quick(plan)
}

// FromEstimate puts a full estimate's headline numbers in QuickEstimate's
// shape, so the two can be compared field by field.
func FromEstimate(e *Estimate) QuickEstimate {
	return QuickEstimate{TTFTS: e.Prefill.TTFTS, TPOTS: e.Decode.TPOTS, TokensPerS: e.Decode.TokensPerS,
		BubbleFraction: e.Decode.BubbleFraction, PrefillBubbleFraction: e.Prefill.BubbleFraction, Bottleneck: e.Decode.Bottleneck}
}

// boundOrder lists bounds in the order phaseUse breaks ties.
var boundOrder = []Bound{BoundCompute, BoundHBM, BoundL2, BoundNVLink, BoundPCIe, BoundNetwork, BoundLatency, BoundBubble}

func boundIndex(b Bound) int {
	for i, o := range boundOrder {
		if o == b {
			return i
		}
	}
	return len(boundOrder) - 2 // latency
}

// stageKind is a stage's position, which decides its extra ops.
type stageKind int

const (
	kindOnly   stageKind = iota // pp = 1: input, layers, sample
	kindFirst                   // input, layers, send
	kindMiddle                  // recv, layers, send
	kindLast                    // recv, layers, sample, token send
)

func kindOf(s, pp int) stageKind {
	switch {
	case pp == 1:
		return kindOnly
	case s == 0:
		return kindFirst
	case s == pp-1:
		return kindLast
	}
	return kindMiddle
}

// passOps is one micro-batch's pass through a stage with a single layer:
// the ops before the layer, the layer's ops, and the ops after it.
type passOps struct {
	pre, layer, post []partition.Op
	// tail is the number of post ops after the sample (not on the path to
	// the first token).
	tail int
	// preT and postT are the terms (opTerms) of pre's and post's ops, what
	// stage prices them from; sendBytes is the payload of post's sends
	// (sendTime). setAround works them out while the ops are at hand; the
	// ops themselves are then kept only when the cache keeps ops
	// (QuickCache.keepOps), for the tests that read them.
	preT, postT []opTerms
	sendBytes   int64
}

// kindOps are a stage kind's passes: the first and the last prefill chunk
// (the same pass when there is one chunk) and one decode step. The chunks
// between are the first chunk's pass with its attention behind ch × chunk
// cached tokens (partition.Op.AtPast): they are priced, not built.
type kindOps struct {
	first, last   passOps
	chunks, chunk int // prefill passes, and tokens per sequence of each but the last
	// attn holds the time of each attention op of chunk ch's pass (the
	// middle chunks'; filled by middleChunks), shared by the layout's stage
	// kinds: their layers' ops are the same (proxy).
	attn             *attnTimes
	decode           passOps
	layerWS, extraWS int64 // reused weight bytes of one layer, and outside the layers
	// decTerms holds the terms of the decode step's layer ops, shared by
	// the stage kinds of the layouts of one TP degree, micro-batch size and
	// proxy depth (decodeOps.layerTerms of the kind that built the layer).
	decTerms *[]opTerms
	// decOps is the kind's decodeOps, whose costs stage reads and adds to.
	decOps *decodeOps
	// shapes are the stage shapes of this layout and kind priced so far
	// (stage), in the order first priced: a layout's kind has a handful
	// (4.7 shapes a layout at 16,384 GPUs), so they are scanned, not
	// hashed by their whole stageKey.
	shapes []shapeCost
}

// shapeCost is a stage shape of a kindOps (the rest of its stageKey) and
// its cost.
type shapeCost struct {
	layers, off int
	out         uint8
	sc          *stageCost
}

// proxyKey names the ops of one layout: passes depend on the TP degree,
// the micro-batch size and the prefill chunk, never on how many layers a
// stage holds (every layer's ops are the same) nor on the batch.
type proxyKey struct{ tp, mbs, chunk, pp int }

// layoutOf is the proxy a plan's passes come from. A pipeline's first and
// last stages hold the same ops with two stages as with more (input and
// layers then a send; a recv, layers, the sample and the tokens' send), so
// every pipeline shares the three-stage proxy; pp = 1 has its own.
func layoutOf(plan *partition.Plan) proxyKey {
	pp := 1
	if plan.PP > 1 {
		pp = 3
	}
	return proxyKey{tp: plan.TP, mbs: plan.MicrobatchSize, chunk: plan.PrefillChunk, pp: pp}
}

type stageKey struct {
	proxyKey
	kind   stageKind
	layers int
	off    int   // first rank of the stage modulo GPUs per node: the TP group's shape
	out    uint8 // link classes its outgoing sends cross: 1 intra-node, 2 inter-node
}

// stageCost is the busy time of one micro-batch's pass on a stage.
type stageCost struct {
	// preN is each prefill chunk's pass for micro-batches after the first;
	// ends0 the first and the last chunk's for micro-batch 0 (first touch
	// of weights; the chunks between take preN's: pre0); sendS the
	// transfer time of the first chunk's send, every middle one's and the
	// last one's (0 if none; preSend reads them). preN lives in the cache's
	// scratch while stage prices the shape and takes its prefill sums
	// (sums) for the plan's micro-batch count; then only its last chunk
	// stays (preLast) and preN is nil, unless the cache keeps chunks
	// (QuickCache.keepChunks).
	preN      []float64
	preLast   float64 // preN[C−1]
	ends0     [2]float64
	sendS     [3]float64
	tailS     float64 // last chunk: time after the sample
	dec       float64
	decBounds [8]float64
	decSendS  float64
	// sums holds the prefill sums over chunks for the last micro-batch
	// count m they were taken with (prefillSums).
	sums struct {
		ok, send  bool
		m, all, x float64
	}
}

// prefillSums is a stage's busy time over all prefill passes, micro-batch
// 0 of each chunk then m−1 more, and its link's (send is false on the last
// stage, which sends no activations): the same sums in the same order each
// time, taken once per stage shape and micro-batch count rather than once
// per stage of every plan. Without preN only the sums stage took can be
// answered (stage prices the shape again for another count).
func (sc *stageCost) prefillSums(m float64, send bool) (all, x float64) {
	if sc.sums.ok && sc.sums.m == m && sc.sums.send == send {
		return sc.sums.all, sc.sums.x
	}
	if sc.preN == nil {
		panic("sim: prefill sums of a stage shape asked for another micro-batch count than stage took them for")
	}
	// Chunk by chunk in order, as pre0 and preSend give them: the first
	// and the last chunk from ends0 and sendS, the chunks between from preN
	// and sendS[1].
	n := len(sc.preN)
	all += sc.ends0[0] + (m-1)*sc.preN[0]
	for _, t := range sc.preN[1:max(n-1, 1)] {
		all += t + (m-1)*t
	}
	if n > 1 {
		all += sc.ends0[1] + (m-1)*sc.preN[n-1]
	}
	if send {
		x += m * sc.sendS[0]
		mid := m * sc.sendS[1]
		for range max(n-2, 0) {
			x += mid
		}
		if n > 1 {
			x += m * sc.sendS[2]
		}
	}
	sc.sums.ok, sc.sums.send, sc.sums.m, sc.sums.all, sc.sums.x = true, send, m, all, x
	return all, x
}

// pre0 is prefill chunk ch's pass time for micro-batch 0.
func (sc *stageCost) pre0(ch int) float64 {
	switch ch {
	case 0:
		return sc.ends0[0]
	case len(sc.preN) - 1:
		return sc.ends0[1]
	}
	return sc.preN[ch]
}

// preSend is the transfer time of prefill chunk ch's send.
func (sc *stageCost) preSend(ch int) float64 {
	switch ch {
	case 0:
		return sc.sendS[0]
	case len(sc.preN) - 1:
		return sc.sendS[2]
	}
	return sc.sendS[1]
}

// decCost is a stage shape's decode step: stageCost's dec, decBounds and
// decSendS, shared by the shapes of its layouts that differ only in their
// prefill chunk.
type decCost struct {
	dec, sendS float64
	bounds     [8]float64
}

type collCostKey struct {
	op      partition.Kind
	bytes   int64
	tp, off int
}

type collCost struct {
	t     float64
	bound Bound
	bi    uint8 // boundIndex(bound), which opTerms.at returns
}

// quickID is what every cached op and cost depends on besides the layout.
type quickID struct {
	model           configs.Model
	context, output int
	sys             topology.System
}

// QuickCache reuses ops and costs across plans that share a model,
// workload and system: the passes of a stage are built once per (TP,
// micro-batch size, prefill chunk) and costed once per stage shape. A plan
// for another model, workload or system resets it. Not safe for
// concurrent use.
type QuickCache struct {
	opts CollectiveOptions
	id   quickID
	have bool
	// passes are the proxies' passes by layout, each kind's with the
	// costs of its stage shapes (kindOps.shapes).
	passes map[proxyKey]*[4]*kindOps
	// decodes are the proxies' decode steps, by proxyKey with chunk 0,
	// each kind's with the decode costs of its stage shapes
	// (decodeOps.costs): a decode step, its working sets and so its
	// residency do not depend on the prefill chunk, so neither does its
	// cost.
	decodes map[proxyKey]*[4]decodeOps
	// slab is where stage takes its stageCosts from, a block at a time.
	slab  []stageCost
	colls map[collCostKey]collCost
	// lastColl is the entry of colls collective last read or wrote.
	lastColl struct {
		ok  bool
		key collCostKey
		cc  collCost
	}
	// passLen is the length of the last passes proxy built per stage kind,
	// one chunk ([0]) or more ([1]) (passBuf).
	passLen [4][2]int
	// planners plan the proxies, one per proxyKey with chunk 0.
	planners map[proxyKey]*proxyPlanner
	// groups are the collectives' groups worked out, by shape.
	groups map[collGroupKey]*collectiveGroup
	// p2ps are sendTime's transfer times by payload, within a node ([0])
	// and between nodes ([1]).
	p2ps  [2]map[int64]float64
	table quickTable // the op-time table of the last plan's hardware
	// runs is Quick's scratch for its stages' runs (quickRun), reused from
	// plan to plan.
	runs []quickRun
	// firstT is stage's scratch: the first prefill pass's op times without
	// first touch, in pass order, which middleChunks reads back; terms and
	// attnAt are middleChunks'.
	firstT, terms []float64
	attnAt        []int
	// preN is stage's scratch for a shape's prefill chunk times
	// (stageCost.preN) while it takes their sums.
	preN []float64
	// keepChunks keeps every stage shape's chunk times (stageCost.preN),
	// for the tests that read them chunk by chunk.
	keepChunks bool
	// build is the slice proxy builds a layout's prefill passes in (and
	// decodeSteps its decode steps): the layer's ops are priced from their
	// terms, the ops around it from theirs (setAround), so none is kept.
	// keepOps keeps each layout's passes whole instead (in a slice of
	// their own: passBuf), for the tests that read the ops.
	build   []partition.Op
	keepOps bool
	// group is collectiveOf's scratch for a TP group's ranks.
	group []int
	// termSlab is where termsOf takes its terms from, a block at a time
	// (newTerms); collOps are the collectives their terms index (opTerms.coll).
	termSlab []opTerms
	collOps  []collOp
	// shapeSlab and decSlab are where stage takes a kind's first lists of
	// stage shapes and decode shapes from (4 entries each; carve).
	shapeSlab []shapeCost
	decSlab   []decShape
}

// NewQuickCache returns an empty cache; opts forces collective algorithms
// as in Options.Collectives.
func NewQuickCache(opts CollectiveOptions) *QuickCache {
	return &QuickCache{opts: opts}
}

func (c *QuickCache) reset(id quickID) {
	c.id, c.have = id, true
	c.passes = map[proxyKey]*[4]*kindOps{}
	c.decodes = map[proxyKey]*[4]decodeOps{}
	c.slab, c.termSlab, c.collOps, c.shapeSlab, c.decSlab = nil, nil, nil, nil, nil
	c.colls = map[collCostKey]collCost{}
	c.lastColl.ok = false
	c.groups = map[collGroupKey]*collectiveGroup{}
	c.planners = map[proxyKey]*proxyPlanner{}
	c.passLen = [4][2]int{}
	c.p2ps = [2]map[int64]float64{{}, {}}
}

// Quick estimates one plan (see the package-level Quick).
func (c *QuickCache) Quick(plan *partition.Plan) (QuickEstimate, error) {
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
	topo := &plan.System.Topology

	// Servers in pipeline order: stage 0, link 0→1, stage 1, …, stage P−1,
	// kept as runs of stages of one shape with their links (quickRun).
	runs := c.runs[:0]
	var busyPrefill, roundTrip, slowest, busyDecode float64
	var crit *stageCost
	// Neighbouring stages mostly share a shape: reuse its cost, and its
	// prefill sums, without a map lookup. Within a plan a shape's key
	// differs only in kind, layers, off and out (prev*).
	var prev *stageCost
	var prevKind stageKind
	var prevLayers, prevOff int
	var prevOut uint8
	var A, X float64
	// The link classes of a stage's sends (outClasses) depend on its first
	// rank modulo the GPUs per node and how far its peer is: T ranks on for
	// every stage but the last, so those stages' are worked out once per
	// offset in a node (outOff, outAt).
	outOff, outAt := -1, uint8(0)
	// A middle stage's shape is its layers and offset in a node (its
	// sends' link classes follow from the offset: outOff), and a deep
	// pipeline's middle stages come in long runs of one shape: each run is
	// priced once and its stages then filled in and summed one by one, in
	// stage order (the same sums, to the bit, as stage by stage:
	// TestQuickRunsOfStagesAreStageByStage). G and tg step the offset from
	// one stage to the next (T ranks on) without a division.
	G := topo.GPUsPerNode
	tg := T % G
	for s := 0; s < P; {
		kind := kindOf(s, P)
		a := plan.RankOf(s, 0) // the stage's first rank (partition numbers ranks)
		layers, off := len(plan.StageLayers[s]), a%G
		var out uint8
		switch {
		case P == 1:
		case s < P-1 && off == outOff:
			out = outAt
		default:
			dst := plan.RankOf((s+1)%P, 0) // the next stage; the last sends tokens to stage 0
			out = outClasses(topo, a, dst, T)
			if s < P-1 {
				outOff, outAt = off, out
			}
		}
		sc := prev
		if prev == nil || kind != prevKind || layers != prevLayers || off != prevOff || out != prevOut {
			key := stageKey{proxyKey: pk, kind: kind, layers: layers, off: off, out: out}
			var err error
			if sc, err = c.stage(plan, key, kinds[kind], a, m); err != nil {
				return QuickEstimate{}, err
			}
			prev, prevKind, prevLayers, prevOff, prevOut = sc, kind, layers, off, out
			// Prefill: micro-batch 0 of each chunk, then m−1 more. Whether
			// a stage sends follows from its kind, part of the shape's key.
			A, X = sc.prefillSums(m, s != P-1)
		}
		// The run: stages s … e−1 of s's shape (middle stages only).
		e := s + 1
		if kind == kindMiddle {
			for o := off; e < P-1; e++ {
				if o += tg; o >= G {
					o -= G
				}
				if o != off || len(plan.StageLayers[e]) != layers {
					break
				}
			}
		}
		lastPass := sc.ends0[1]
		if m > 1 {
			lastPass = sc.preLast
		}
		// Decode: the run's slowest and critical stage are its first's.
		slowest = maxF(maxF(slowest, sc.dec), sc.decSendS)
		if crit == nil || sc.dec > crit.dec {
			crit = sc
		}
		trip, busy := sc.dec+sc.decSendS, m*sc.dec
		if s == P-1 { // the last stage: no link after it, its tail not on the way to the first token
			busyPrefill += A
			runs = append(runs, quickRun{e0: sc.ends0[0], a: A - sc.tailS, lp: lastPass - sc.tailS, n: 1})
			roundTrip += trip
			busyDecode += busy
			break
		}
		runs = append(runs, quickRun{e0: sc.ends0[0], a: A, lp: lastPass, f0: sc.sendS[0], x: X, f2: sc.sendS[2], n: e - s, link: true})
		for ; s < e; s++ {
			busyPrefill += A
			roundTrip += trip
			busyDecode += busy
		}
	}
	c.runs = runs
	ttft := ttftOf(runs)
	ttft *= replicaSpread(c.table.of(plan), plan, ttft) // the later of the replicas, as the timeline prices it (optable_replicas.go)
	q := QuickEstimate{TTFTS: ttft, RoundTripS: roundTrip, BusiestS: m * slowest}
	q.TPOTS = max(q.RoundTripS, q.BusiestS)
	q.TokensPerS = float64(w.Batch*max(plan.DP, 1)) / q.TPOTS // every replica serves the batch
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

// quickRun is a run of stages of one shape as Quick's TTFT walk reads
// them: n stages, each a server whose first pass takes e0, all its passes
// a and its last pass lp, and, but for the last stage (link false), the
// link after it, a server of times f0, x and f2.
type quickRun struct {
	e0, a, lp float64
	f0, x, f2 float64
	n         int
	link      bool
}

// ttftOf is the TTFT of the servers of runs, in pipeline order: the last
// pass leaves the last stage no earlier than any server k allows — the
// first pass reaching k, all passes through k, the last pass leaving from
// k to the end. It takes the sums and maxima a walk over lists of every
// server's times (first pass, all passes, last pass) takes, in the same
// order: after starts as the sum of every server's last pass but server
// 0's; then, server by server, ttft = max(ttft, before + all + after),
// before += its first pass, after −= the next server's last pass.
func ttftOf(runs []quickRun) float64 {
	after := 0.0
	for ri := range runs {
		r := &runs[ri]
		for j := range r.n {
			if ri > 0 || j > 0 { // every stage but stage 0
				after += r.lp
			}
			if r.link {
				after += r.f2
			}
		}
	}
	var ttft, before float64
	for ri := range runs {
		r := &runs[ri]
		for j := range r.n {
			ttft = maxF(ttft, before+r.a+after) // the stage
			if !r.link {
				break // the last stage: no server after it
			}
			before += r.e0
			after -= r.f2
			ttft = maxF(ttft, before+r.x+after) // its link
			before += r.f0
			next := r.lp // the next stage's last pass: this run's, or the next run's
			if j == r.n-1 {
				next = runs[ri+1].lp
			}
			after -= next
		}
	}
	return ttft
}

// maxF is max(m, v) for float64s, NaN and signed zeros included
// (TestMaxFIsMax), as a compare that is mostly false and predicted: in
// Quick's loops over a deep pipeline's stages and servers the result is
// carried from one step to the next, and the built-in max's handling of
// NaN and −0 is on that chain.
func maxF(m, v float64) float64 {
	if v > m || v != v {
		return v
	}
	if v == 0 && m == 0 && math.Signbit(m) {
		return v // max(−0, ±0) is v
	}
	return m
}

func argmaxBound(t [8]float64) (Bound, float64) {
	best, bi := -1.0, 0
	for i, v := range t {
		if v > best {
			best, bi = v, i
		}
	}
	return boundOrder[bi], best
}

// outClasses says which link classes the sends of TP index i from rank
// src0+i to dst0+i cross, over all i: bit 1 intra-node, bit 2 inter-node.
// With G GPUs per node and d = dst0 − src0, rank x = src0+i and x + d
// share a node exactly when x mod G lies in [−d, G − d): only the residues
// of the first min(tp, G) indices matter.
func outClasses(t *topology.Topology, src0, dst0, tp int) uint8 {
	g, d := t.GPUsPerNode, dst0-src0
	if tp > 0 && (d >= g || -d >= g) {
		return 2 // [−d, G − d) holds no residue: every send leaves its node
	}
	lo, hi := max(0, -d), min(g, g-d)
	var mask uint8
	r := src0 % g
	for i := 0; i < min(tp, g) && mask != 3; i++ {
		if lo <= r && r < hi {
			mask |= 1
		} else {
			mask |= 2
		}
		if r++; r == g {
			r = 0
		}
	}
	return mask
}

// proxy returns the passes of every stage kind for a layout, built by
// partition from a plan of one layer per stage, one micro-batch of the real
// micro-batch size and the real prefill chunk: the first and the last
// prefill pass and a decode step of the real plan's Programs, once. Every
// stage builds the same layer: a three-stage proxy's last stage builds only
// the ops around it (partition.Plan.PassAround) and takes the first
// stage's layer, and its middle stage is not built at all: its passes are
// the last stage's ops before the layer (the activations' recv), the first
// stage's layer and its ops after it (the activations' send). These are
// the ops partition builds for those stages but for their layer index,
// names and peers (TestQuickProxyStagesAreBuiltStages), which nothing
// Quick prices reads.
func (c *QuickCache) proxy(plan *partition.Plan, pk proxyKey) (*[4]*kindOps, error) {
	if k, ok := c.passes[pk]; ok {
		return k, nil
	}
	pp, err := c.proxyPlan(plan, pk)
	if err != nil {
		return nil, err
	}
	lay := new(layoutOps) // the layout's kinds and their shared attention times, one allocation
	kinds, attn := &lay.kinds, &lay.attn
	dk := proxyKey{tp: pk.tp, mbs: pk.mbs, pp: pk.pp} // a decode step does not depend on the prefill chunk
	d, ok := c.decodes[dk]
	if !ok {
		d = &[4]decodeOps{}
		c.decodes[dk] = d
	}
	if !d[decodeLayerKind(pk.pp)].ok {
		c.decodeSteps(plan, pp, pk.pp, d)
	}
	for s := 0; s < pk.pp; s++ {
		kind := kindOf(s, pk.pp)
		if kind == kindMiddle {
			continue // after the first and the last
		}
		r := pp.RankOf(s, 0)
		k := &lay.ops[max(kind-1, 0)] // a pipeline's first and last; the only stage's
		*k = kindOps{chunks: pp.PrefillChunks, chunk: pp.PrefillChunk, attn: attn}
		if f := kinds[kindFirst]; kind == kindLast {
			// The layer is the first stage's: build the ops around it, both
			// passes into one slice: the cache's scratch (build), which the
			// first stage's passes are done with, or one kept (passBuf)
			// when the cache keeps ops.
			var at0, at1 int
			ops := c.build[:0]
			if c.keepOps {
				ops = c.passBuf(&d[kind], kind, k.chunks > 1, 10)
			}
			ops, at0 = pp.AppendPassAround(ops, r, partition.Prefill, 0, 0)
			n0 := len(ops)
			if k.chunks > 1 {
				ops, at1 = pp.AppendPassAround(ops, r, partition.Prefill, 0, k.chunks-1)
			}
			k.first = opsAround(ops[:n0:n0], at0, f.first.layer)
			c.setAround(plan, &k.first, partition.Prefill)
			k.last = k.first
			if k.chunks > 1 {
				k.last = opsAround(ops[n0:], at1, f.last.layer)
				c.setAround(plan, &k.last, partition.Prefill)
			}
			if c.keepOps {
				c.keptPasses(&d[kind], kind, k.chunks > 1, len(ops))
			} else {
				c.build = ops[:0] // the next layout's scratch
			}
		} else {
			// Both passes built into one slice: the cache's scratch (build),
			// or one kept whole (passBuf) when the cache keeps the layer ops.
			ops := c.build[:0]
			if c.keepOps {
				ops = c.passBuf(&d[kind], kind, k.chunks > 1, 12+10)
			}
			ops = pp.AppendPrefillPass(ops, r, 0, 0)
			n0 := len(ops)
			if k.chunks > 1 {
				ops = pp.AppendPrefillPass(ops, r, 0, k.chunks-1)
			}
			k.first = splitPass(ops[:n0:n0])
			k.last = k.first
			if k.chunks > 1 {
				k.last = splitPass(ops[n0:])
			}
			// The layer ops' terms and attention ops, for every stage kind
			// of the layout (they all price this layer), and the terms of
			// the ops around it.
			c.prefillTerms(plan, k)
			c.setAround(plan, &k.first, partition.Prefill)
			if k.chunks > 1 {
				c.setAround(plan, &k.last, partition.Prefill)
			}
			if c.keepOps {
				c.keptPasses(&d[kind], kind, k.chunks > 1, len(ops))
			} else {
				c.build = ops[:0] // the next layout's scratch
				k.first.layer, k.last.layer = nil, nil
			}
			if k.chunks == 1 {
				k.last = k.first
			}
		}
		k.decode, k.layerWS, k.extraWS = d[kind].pass, d[kind].layerWS, d[kind].extraWS
		k.decTerms, k.decOps = &d[decodeLayerKind(pk.pp)].layerTerms, &d[kind]
		kinds[kind] = k
	}
	if pk.pp == 3 {
		f, l := kinds[kindFirst], kinds[kindLast]
		k := &lay.ops[kindMiddle-1]
		*k = kindOps{chunks: f.chunks, chunk: f.chunk, attn: attn, first: middlePass(&f.first, &l.first), last: middlePass(&f.last, &l.last)}
		k.decode, k.layerWS, k.extraWS = d[kindMiddle].pass, d[kindMiddle].layerWS, d[kindMiddle].extraWS
		k.decTerms, k.decOps = &d[decodeLayerKind(pk.pp)].layerTerms, &d[kindMiddle]
		kinds[kindMiddle] = k
	}
	c.passes[pk] = kinds
	return kinds, nil
}

// decodeSteps builds the decode steps of a proxy plan pp of depth depth
// (1 or 3) into d: the only or first stage's step
// (partition.Plan.AppendDecodeStep: its decode Program, one micro-batch),
// and for a pipeline the last stage's step around that layer
// (partition.Plan.AppendPassAround) and the middle stage's (middlePass),
// with their working sets, the terms of the layer's ops (layerTerms, for
// plan's hardware) and of the ops around it (setAround). Both are built in
// the cache's scratch (build); the ops are kept, in one slice of their
// joint length, only when the cache keeps ops (keepOps; stage prices them
// from their terms). They do not depend on the prefill chunk, so every
// layout of the proxy's TP degree, micro-batch size and depth shares them.
func (c *QuickCache) decodeSteps(plan, pp *partition.Plan, depth int, d *[4]decodeOps) {
	k0 := decodeLayerKind(depth)
	ops := pp.AppendDecodeStep(c.build[:0], pp.RankOf(0, 0), 0)
	n0 := len(ops)
	var at int
	if depth > 1 {
		ops, at = pp.AppendPassAround(ops, pp.RankOf(depth-1, 0), partition.Decode, 0, 0)
	}
	c.build = ops[:0] // the next layout's scratch, once the steps are priced
	// The steps as built, in the scratch: their working sets (each step's
	// whole, with the layer's ops) are worked out from these.
	step := splitPass(ops[:n0:n0])
	var around passOps
	if depth > 1 {
		around = opsAround(ops[n0:], at, step.layer)
	}
	set := func(kind stageKind, p *passOps) {
		d[kind].layerWS = opsWorkingSet(p.layer, nil, nil)
		d[kind].extraWS = workingSetOfPass(p) - d[kind].layerWS
		d[kind].ok = true
	}
	set(k0, &step)
	d[k0].layerTerms = c.termsOf(plan, step.layer, partition.Decode)
	if depth > 1 {
		mid := middlePass(&step, &around)
		set(kindLast, &around)
		set(kindMiddle, &mid)
	}
	if c.keepOps {
		// Kept: [pre, layer, post, the last stage's ops around it].
		kept := slices.Clone(ops)
		step = splitPass(kept[:n0:n0])
		if depth > 1 {
			around = opsAround(kept[n0:], at, step.layer)
		}
	}
	c.setAround(plan, &step, partition.Decode)
	if !c.keepOps {
		step.layer = nil // priced from its terms
	}
	d[k0].pass = step
	if depth > 1 {
		around.layer = step.layer
		c.setAround(plan, &around, partition.Decode)
		d[kindLast].pass = around
		d[kindMiddle].pass = middlePass(&step, &around)
	}
	clear(ops) // the scratch keeps no op's strings and groups alive
}

// setAround works out p's terms of the ops around its layer (preT, postT)
// for phase on plan's hardware, and its sends' payload (sendBytes); then,
// unless the cache keeps ops, p drops the ops around the layer, which
// stage prices from those terms and which may lie in the cache's scratch.
func (c *QuickCache) setAround(plan *partition.Plan, p *passOps, phase partition.Phase) {
	p.preT = c.termsOf(plan, p.pre, phase)
	p.postT = c.termsOf(plan, p.post, phase)
	p.sendBytes = sendBytes(p.post)
	if !c.keepOps {
		p.pre, p.post = nil, nil
	}
}

// layoutOps is what proxy makes for a layout, in one allocation: its
// stage kinds' passes (ops: the only stage's first, or a pipeline's first,
// middle and last stage's), those kinds by stage kind (kinds: nil for a
// kind the layout has not) and their shared attention times.
type layoutOps struct {
	kinds [4]*kindOps
	ops   [3]kindOps
	attn  attnTimes
}

// decodeLayerKind is the stage kind whose decode step's layer the kinds of
// a proxy of depth pp share: the only stage's, or the first stage's (the
// last stage's pass is built around it, the middle one's is made of both).
func decodeLayerKind(pp int) stageKind {
	if pp == 1 {
		return kindOnly
	}
	return kindFirst
}

// layerTermsOf are the terms of a stage kind's layer ops: of its first and
// last prefill pass and of its decode step.
type layerTermsOf struct{ first, last, dec []opTerms }

// layerTerms is k's layerTermsOf: its prefill passes' terms, which proxy
// worked out (prefillTerms), and its decode step's, which decodeSteps
// worked out when it built the step (else here, from its layer ops): every
// stage kind of a proxy prices the same layer ops (proxy).
func (c *QuickCache) layerTerms(plan *partition.Plan, k *kindOps) layerTermsOf {
	a := k.attn
	if *k.decTerms == nil {
		*k.decTerms = c.termsOf(plan, k.decode.layer, partition.Decode)
	}
	return layerTermsOf{first: a.first, last: a.last, dec: *k.decTerms}
}

// prefillTerms works out the terms of the layer ops of k's first and last
// prefill passes (attnTimes.first, last), and keeps a copy of each
// attention op of the first pass's layer that reads no weight, with its
// place in the layer (attnTimes.ops, pos): what stage and middleChunks
// read of the layer ops, so that a cache need not keep them (keepOps):
// a collective's terms hold what of it they price (collOp).
func (c *QuickCache) prefillTerms(plan *partition.Plan, k *kindOps) {
	a := k.attn
	a.first = c.termsOf(plan, k.first.layer, partition.Prefill)
	a.last = a.first
	if k.chunks > 1 {
		a.last = c.termsOf(plan, k.last.layer, partition.Prefill)
	}
	for i := range k.first.layer {
		if op := &k.first.layer[i]; op.Kind == partition.Attention && op.WeightBytes == 0 {
			a.pos, a.ops = append(a.pos, i), append(a.ops, *op)
		}
	}
}

// passBuf is the slice proxy builds a stage kind's first and last prefill
// passes in (one pass when multi is false) when the cache keeps ops
// (keepOps), kept for the layout: of the
// length those passes had in the last layout of the same TP degree,
// micro-batch size and proxy depth (d.prefillOps), which they have again
// whatever the chunk; the first time, of the length they had in the last
// layout of any other (c.passLen), or of the builder's bound on a
// one-layer pass (12 ops a layer and at most 10 around them: perPass, 10
// for a pass built around another stage's layer). So they are built in
// place, without a copy out of a reused buffer; passes longer than the
// slice grow it as append does.
func (c *QuickCache) passBuf(d *decodeOps, kind stageKind, multi bool, perPass int) []partition.Op {
	n := d.prefillOps[b2i(multi)]
	if n == 0 {
		n = c.passLen[kind][b2i(multi)]
	}
	if n == 0 {
		n = perPass * (1 + b2i(multi))
	}
	return make([]partition.Op, 0, n)
}

// keptPasses records the length of the passes proxy built for a stage
// kind (passBuf).
func (c *QuickCache) keptPasses(d *decodeOps, kind stageKind, multi bool, n int) {
	d.prefillOps[b2i(multi)] = n
	c.passLen[kind][b2i(multi)] = n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// opsAround is a one-layer proxy stage's pass (a prefill chunk or its
// decode step) from the ops partition.Plan.PassAround builds around its
// layer and their index, with layer, another stage's layer ops of the same
// pass, in place of its own.
func opsAround(ops []partition.Op, at int, layer []partition.Op) passOps {
	p := passOps{pre: ops[:at:at], layer: layer, post: ops[at:]}
	for k := range p.post {
		if p.post[k].Kind == partition.Sample {
			p.tail = len(p.post) - k - 1
		}
	}
	return p
}

// workingSetOfPass is workingSet of the Program holding p's ops in order
// (pre, layer, post), without joining them into one slice: the same ops
// visited in the same order, each tensor counted once.
func workingSetOfPass(p *passOps) int64 {
	return opsWorkingSet(p.pre, p.layer, p.post)
}

// opsWorkingSet is workingSet of the Program holding a's, b's and c's ops
// in order. A proxy's pass holds one layer, a dozen reusable weights at
// most, so the tensors seen are kept in a list on the stack and scanned,
// not hashed into a map (TestOpsWorkingSetIsWorkingSet).
func opsWorkingSet(a, b, c []partition.Op) int64 {
	var buf [24]tensorKey
	seen := buf[:0]
	var bytes int64
	for _, ops := range [3][]partition.Op{a, b, c} {
	next:
		for i := range ops {
			op := &ops[i]
			if !reusable(op) {
				continue
			}
			key := tensorKey{op.Layer, op.Tensor}
			for _, k := range seen {
				if k == key {
					continue next
				}
			}
			seen = append(seen, key)
			bytes += op.WeightBytes
		}
	}
	return bytes
}

// middlePass is a middle stage's pass from the first stage's (its layer and
// the send after it) and the last stage's (the recv before its layer).
func middlePass(first, last *passOps) passOps {
	return passOps{pre: last.pre, layer: first.layer, post: first.post, tail: first.tail,
		preT: last.preT, postT: first.postT, sendBytes: first.sendBytes}
}

// attnTimes is kindOps.attn.
type attnTimes struct {
	// s holds the times of the attention ops of the n middle chunks'
	// layers, op after op, each op's chunk 1 first (at); nil until
	// middleChunks works them out.
	s []float64
	n int
	// first and last are the terms (opTerms) of the layer ops of the
	// layout's first and last prefill pass, shared by its stage kinds
	// (prefillTerms). ops are copies of the first pass's layer's
	// attention ops that read no weight, pos their places in the layer:
	// what middleChunks prices again at each chunk's past.
	first, last []opTerms
	ops         []partition.Op
	pos         []int
}

// at is the time of the j-th attention op of middle chunk ch's layer.
func (a *attnTimes) at(ch, j int) float64 {
	return a.s[j*a.n+ch-1]
}

// of is the times of the j-th attention op of every middle chunk's layer,
// chunk 1's first.
func (a *attnTimes) of(j int) []float64 {
	return a.s[j*a.n : (j+1)*a.n : (j+1)*a.n]
}

// decodeOps is a stage kind's decode step in a layout's proxy, and the
// working sets proxy derives from it: the same for every prefill chunk
// (partition builds a decode step from the micro-batch size, the context
// and the shards alone), so built once per (tp, micro-batch size, proxy
// depth).
type decodeOps struct {
	ok bool
	// pass is the step: its terms around the layer (setAround), its ops
	// only when the cache keeps them (keepOps), else nil: the layer is
	// priced from layerTerms (decodeSteps).
	pass             passOps
	layerWS, extraWS int64
	// layerTerms are the terms (opTerms) of the decode step's layer ops,
	// set on the kind that built them (decodeSteps).
	layerTerms []opTerms
	// prefillOps is the length of the stage kind's first prefill pass
	// ([0]: a one-chunk prefill) and of its first and last passes together
	// ([1]) in the last layout built (passBuf); 0 before any.
	prefillOps [2]int
	// costs are the decode costs of the stage shapes of this kind priced so
	// far (stage), scanned like kindOps.shapes: a decode step does not
	// depend on the prefill chunk, so the shapes of every layout of the
	// kind's TP degree, micro-batch size and proxy depth share them.
	costs []decShape
}

// decShape is a stage shape's decode cost, by the rest of its stageKey.
type decShape struct {
	layers, off int
	out         uint8
	dc          decCost
}

// proxyPlan is the plan a layout's passes are built from: one layer per
// stage (pk.pp ≤ 3 stages, one of each kind), one micro-batch of the real
// micro-batch size and the real prefill chunk, on a placeholder topology.
func proxyPlan(plan *partition.Plan, pk proxyKey) (*partition.Plan, error) {
	cfg, err := proxyConfig(plan, pk)
	if err != nil {
		return nil, err
	}
	pp, err := partition.NewPlanStages(cfg) // its passes are built rank by rank (RankAt)
	return checkProxy(plan, pp, err)
}

// proxyPlan is the package's proxyPlan from a partition.Planner per TP
// degree, micro-batch size and proxy depth (proxyConfig gives the layouts
// of one such group configs that differ only in their prefill chunk: a
// Planner's contract), which validates the group's first in full and
// plans it without the memory fit (partition.Planner.Layout). The
// group's later layouts are that plan rechunked (partition.Plan.Rechunk),
// not planned again. A proxy fits wherever a plan of its layout does (one
// layer a stage, one micro-batch of the plan's size, the plan's chunk),
// so its memory is not worked out: a proxy that would not fit, which no
// plan that fits has, is built all the same. Its plans are
// NewPlanStages's, field for field, but for StageMemory (zero), which
// nothing proxy builds reads; its errors are NewPlanStages's, for a chunk
// out of range as well (TestQuickProxyPlansArePlannedAlone). The group's
// layouts share one config, their prefill chunk set in turn, and one Plan
// (ReusePlan, ReuseStageMemory): proxy reads a proxy plan only while it
// builds the layout's passes, and keeps nothing of it.
func (c *QuickCache) proxyPlan(plan *partition.Plan, pk proxyKey) (*partition.Plan, error) {
	dk := proxyKey{tp: pk.tp, mbs: pk.mbs, pp: pk.pp}
	pl, ok := c.planners[dk]
	if !ok {
		cfg, err := proxyConfig(plan, pk)
		if err != nil {
			return nil, err
		}
		pl = &proxyPlanner{pl: partition.NewPlanner(), cfg: cfg}
		pl.pl.ReusePlan, pl.pl.ReuseStageMemory = true, true
		c.planners[dk] = pl
	}
	if pl.plan != nil && pl.plan.Rechunk(pk.chunk) == nil { // writes pl.cfg's chunk, the plan's config
		return checkProxy(plan, pl.plan, nil)
	}
	// The group's first layout, or a chunk Rechunk refuses: planned
	// without the memory fit (Layout) when the chunk is fixed, as a plan's
	// is; else (a chunk of 0, which no plan has) as NewPlanStages plans
	// it.
	pl.cfg.Parallel.PrefillChunk = pk.chunk // proxyConfig's, but for the chunk
	var pp *partition.Plan
	var err error
	if pk.chunk > 0 {
		pp, err = pl.pl.Layout(pl.cfg)
	} else {
		pp, err = pl.pl.Stages(pl.cfg)
	}
	pl.plan = pp // the Planner's one Plan (ReusePlan), nil on an error
	return checkProxy(plan, pp, err)
}

// proxyPlanner is a QuickCache's Planner of the proxies of one TP degree,
// micro-batch size and proxy depth, their config, and the group's plan
// once one is planned (rechunked for the group's later layouts).
type proxyPlanner struct {
	pl   *partition.Planner
	cfg  *configs.Config
	plan *partition.Plan
}

// proxyConfig is the config of a layout's proxy plan.
func proxyConfig(plan *partition.Plan, pk proxyKey) (*configs.Config, error) {
	cfg := *plan.Config
	// A proxy stands for every plan of its layout: the name is the proxy's,
	// with no plan's description (nothing planned reads either).
	cfg.Name, cfg.Description = "quick-proxy", ""
	cfg.Model = plan.Model
	cfg.Model.Layers = pk.pp
	cfg.Workload.Batch = pk.mbs
	cfg.Workload.Phases = append([]string(nil), plan.Config.Workload.Phases...)
	cfg.Parallel = configs.Parallel{TP: pk.tp, PP: pk.pp, Microbatches: 1, Schedule: "fill-drain", PrefillChunk: pk.chunk}
	cfg.Hardware.GPU = plan.System.GPU
	topo, err := proxyTopology(pk.tp * pk.pp)
	if err != nil {
		return nil, err
	}
	cfg.Topology = configs.Topology{Topology: topo}
	return &cfg, nil
}

// checkProxy is the proxy plan pp of plan, or its error, named for plan.
func checkProxy(plan, pp *partition.Plan, err error) (*partition.Plan, error) {
	if err != nil {
		return nil, fmt.Errorf("sim: quick estimate of %s: %w", plan.Config.Name, err)
	}
	if pp.PrefillChunks != plan.PrefillChunks {
		return nil, fmt.Errorf("sim: quick estimate of %s: proxy has %d prefill chunks, plan %d", plan.Config.Name, pp.PrefillChunks, plan.PrefillChunks)
	}
	return pp, nil
}

// splitPass splits one pass of a one-layer stage into the ops before, of,
// and after the layer.
func splitPass(ops []partition.Op) passOps {
	var p passOps
	i := 0
	for i < len(ops) && ops[i].Layer < 0 {
		i++
	}
	j := i
	for j < len(ops) && ops[j].Layer >= 0 {
		j++
	}
	p.pre, p.layer, p.post = ops[:i], ops[i:j], ops[j:]
	for k := range p.post {
		if p.post[k].Kind == partition.Sample {
			p.tail = len(p.post) - k - 1
		}
	}
	return p
}

// proxyTopology is a placeholder system of n GPUs for building ops; op
// shapes do not depend on links, and costs use the real system.
func proxyTopology(n int) (topology.Topology, error) {
	link := topology.Link{Class: topology.NVLink, Name: "proxy", BytesPerS: 1e9}
	for g := min(n, 576); g >= 1; g-- {
		if n%g == 0 && n/g <= 4096 {
			return topology.Topology{Name: "quick-proxy", Nodes: n / g, GPUsPerNode: g, Intra: link, Inter: link}, nil
		}
	}
	return topology.Topology{}, fmt.Errorf("sim: quick estimate: no placeholder topology for %d GPUs", n)
}

// stage costs one stage shape, once per cache, and takes its prefill sums
// for m micro-batches (prefillSums; a stage of kind first or middle sends
// activations, one of kind last or only does not). A shape whose chunk
// times were not kept (QuickCache.keepChunks) is priced again when asked
// for another m.
func (c *QuickCache) stage(plan *partition.Plan, key stageKey, k *kindOps, first int, m float64) (*stageCost, error) {
	at := -1 // the shape's place in k.shapes, −1 before it is priced
	for i := range k.shapes {
		if e := &k.shapes[i]; e.layers == key.layers && e.off == key.off && e.out == key.out {
			if sc := e.sc; sc.preN != nil || sc.sums.m == m {
				return sc, nil
			}
			at = i
			break
		}
	}
	g := &plan.System.GPU
	L := float64(key.layers)
	res := 1.0
	if ws := int64(key.layers)*k.layerWS + k.extraWS; ws > 0 {
		res = math.Min(1, float64(g.UsableL2Bytes())/float64(ws))
	}
	C := k.chunks
	sc := c.newStageCost()
	if c.keepChunks {
		sc.preN = make([]float64, C)
	} else {
		if cap(c.preN) < C {
			c.preN = make([]float64, C)
		}
		sc.preN = c.preN[:C:C]
	}
	// The layer's ops are priced from their terms, shared by the layout's
	// stage kinds (layerTerms), the ops around it by opTime.
	lt := c.layerTerms(plan, k)
	var bounds [8]float64
	// pass is a decode step's time, and its bounds, op by op in pass order.
	pass := func(p *passOps) (float64, error) {
		bounds = [8]float64{}
		var t float64
		for _, part := range [...]struct {
			terms []opTerms
			mult  float64
		}{{p.preT, 1}, {lt.dec, L}, {p.postT, 1}} {
			for i := range part.terms {
				ot, bi, err := part.terms[i].at(c, plan, g, res, false, first, key.tp, partition.Decode)
				if err != nil {
					return 0, err
				}
				t += part.mult * ot
				bounds[bi] += part.mult * ot
			}
		}
		return t, nil
	}
	// passBoth is a prefill pass's time without first touch (tN) and with
	// first touch of the layer's (layerFirst) and the ops after it
	// (postFirst) weights (t0) in one walk: an op priced without first
	// touch in both is priced once, and each sum adds the same terms in the
	// same order as a walk of its own would. terms are the layer's.
	passBoth := func(p *passOps, terms []opTerms, layerFirst, postFirst, keep bool) (tN, t0 float64, err error) {
		if keep {
			c.firstT = c.firstT[:0]
		}
		for _, part := range [...]struct {
			terms []opTerms
			mult  float64
			first bool
		}{{p.preT, 1, false}, {terms, L, layerFirst}, {p.postT, 1, postFirst}} {
			for i := range part.terms {
				tm := &part.terms[i]
				var ot, o0 float64
				if ot, _, err = tm.at(c, plan, g, res, false, first, key.tp, partition.Prefill); err != nil {
					return 0, 0, err
				}
				o0 = ot
				if part.first && tm.touches() {
					o0, _, _ = tm.at(c, plan, g, res, true, first, key.tp, partition.Prefill) // a compute op: no error
				}
				if keep {
					c.firstT = append(c.firstT, ot)
				}
				tN += part.mult * ot
				t0 += part.mult * o0
			}
		}
		return tN, t0, nil
	}
	var err error
	ends := []int{0, C - 1}
	if C == 1 {
		ends = ends[:1] // one pass, the first and the last
	}
	for _, ch := range ends {
		p, terms := &k.first, lt.first
		if ch == C-1 {
			p, terms = &k.last, lt.last
		}
		// Chunk 0's op times are the middle chunks' but for attention.
		var t0 float64
		if sc.preN[ch], t0, err = passBoth(p, terms, ch == 0, ch == C-1, ch == 0 && C > 2); err != nil {
			return nil, err
		}
		send := c.sendTime(plan, p.sendBytes, key.out)
		if ch == 0 { // with one chunk, both ends
			sc.ends0[0], sc.sendS[0] = t0, send
		}
		if ch == C-1 {
			sc.ends0[1], sc.sendS[2] = t0, send
		}
	}
	if C > 2 {
		if err := c.middleChunks(plan, sc, k, L, res, first, key.tp); err != nil {
			return nil, err
		}
		sc.sendS[1] = c.sendTime(plan, k.first.sendBytes, key.out)
	}
	if lp := &k.last; lp.tail > 0 {
		for i := len(lp.postT) - lp.tail; i < len(lp.postT); i++ {
			ot, _, err := lp.postT[i].at(c, plan, g, res, false, first, key.tp, partition.Prefill)
			if err != nil {
				return nil, err
			}
			sc.tailS += ot
		}
	}
	d := k.decOps
	var dc *decCost
	for i := range d.costs {
		if e := &d.costs[i]; e.layers == key.layers && e.off == key.off && e.out == key.out {
			dc = &e.dc
			break
		}
	}
	if dc == nil {
		var nd decCost
		if nd.dec, err = pass(&k.decode); err != nil {
			return nil, err
		}
		nd.bounds = bounds
		nd.sendS = c.sendTime(plan, k.decode.sendBytes, key.out)
		if d.costs == nil {
			d.costs = carve(&c.decSlab, 4, 64)[:0] // a kind's decode shapes: 3.4 on average at 16,384 GPUs
		}
		d.costs = append(d.costs, decShape{layers: key.layers, off: key.off, out: key.out, dc: nd})
		dc = &d.costs[len(d.costs)-1].dc
	}
	sc.dec, sc.decBounds, sc.decSendS = dc.dec, dc.bounds, dc.sendS
	sc.preLast = sc.preN[C-1]
	if c.keepChunks {
		sc.sums.ok = false // taken from the chunks when asked (prefillSums)
	} else {
		sc.prefillSums(m, key.kind == kindFirst || key.kind == kindMiddle)
		sc.preN = nil // the cache's scratch: the next shape's
	}
	if at < 0 {
		if k.shapes == nil {
			k.shapes = carve(&c.shapeSlab, 4, 256)[:0]
		}
		k.shapes = append(k.shapes, shapeCost{layers: key.layers, off: key.off, out: key.out, sc: sc})
	} else {
		k.shapes[at].sc = sc
	}
	return sc, nil
}

// newStageCost is a zero stageCost from the cache's slab: one allocation
// for 64 of them (a 16,384-GPU search prices 319 stage shapes). Nothing
// appends to a block once it is full, so the costs handed out stay put.
func (c *QuickCache) newStageCost() *stageCost {
	if len(c.slab) == cap(c.slab) {
		c.slab = make([]stageCost, 0, 64)
	}
	c.slab = c.slab[:len(c.slab)+1]
	return &c.slab[len(c.slab)-1]
}

// touches says whether opTime can price op differently with first touch:
// only a compute op whose weight L2 could hold (computeCost reads
// reusable weight bytes from L2 except on first touch; with no weight bytes
// it reads none either way). Collectives, sends and recvs never look at
// first touch.
func touches(op *partition.Op) bool {
	return reusable(op) && op.WeightBytes != 0
}

// middleChunks sets the pass times (preN, which pre0 reads for them) of
// prefill chunks 1 … C−2, which
// differ from the first chunk's pass only in their attention ops
// (partition.Op.AtPast) and touch no weight first. The other ops' times
// are those stage has just priced for the first chunk (c.firstT); the
// attention ops, which read no weight (so
// neither the stage's L2 residency nor its links change their time), once
// per chunk for every shape of the layout (kindOps.attn). Each chunk's
// time is then summed op by op in pass order from the shared sum of the ops
// before its first attention op, as pass sums a built chunk's ops: the
// times are the same to the bit.
func (c *QuickCache) middleChunks(plan *partition.Plan, sc *stageCost, k *kindOps, L, res float64, first, tp int) error {
	p, a := &k.first, k.attn
	terms := c.terms[:0] // mult × op time in pass order
	attn := c.attnAt[:0] // which terms are attention ops: k.attn.at(ch, j) for the j-th
	// The layer's ops are its terms' (a.first), its weightless attention
	// ops those at a.pos (prefillTerms): the layer need not be kept.
	for pi, n := range [3]int{len(p.preT), len(a.first), len(p.postT)} {
		mult := 1.0
		if pi == 1 {
			mult = L
		}
		j := 0
		for i := range n {
			if pi == 1 && j < len(a.pos) && a.pos[j] == i {
				j++
				attn = append(attn, len(terms))
				terms = append(terms, 0)
				continue
			}
			// stage priced this op of chunk 0 just before, with the same
			// arguments: c.firstT holds its time.
			terms = append(terms, mult*c.firstT[len(terms)])
		}
	}
	c.terms, c.attnAt = terms, attn
	if a.s == nil {
		// One list for every middle chunk, op after op (attnTimes.at).
		a.s, a.n = make([]float64, (k.chunks-2)*len(a.ops)), k.chunks-2
		for j := range a.ops {
			op := a.ops[j] // one copy, moved to each chunk's past in turn
			times := a.of(j)
			for ch := 1; ch < k.chunks-1; ch++ {
				op.SetPast(ch * k.chunk)
				ot, _, err := c.opTime(plan, &op, res, false, first, tp, partition.Prefill)
				if err != nil {
					return err
				}
				times[ch-1] = ot
			}
		}
	}
	var prefix float64
	from := len(terms)
	if len(attn) > 0 {
		from = attn[0]
	}
	for _, v := range terms[:from] {
		prefix += v
	}
	// Every middle chunk's sum at once, term by term: each chunk adds the
	// same terms in the same order as a sum of its own
	// (TestQuickMiddleChunksEqualBuiltChunks holds them to built chunks).
	mid := sc.preN[1 : k.chunks-1]
	for ch := range mid {
		mid[ch] = prefix
	}
	j := 0
	for i := from; i < len(terms); i++ {
		if j < len(attn) && attn[j] == i {
			times := a.of(j)[:len(mid)]
			for ch := range mid {
				mid[ch] += float64(L * times[ch]) // rounded, as the product was: never fused into the sum
			}
			j++
			continue
		}
		addTo(mid, terms[i])
	}
	return nil
}

// addTo adds v to every element of xs, four at a time: each element's one
// addition, as a loop of one at a time makes it.
func addTo(xs []float64, v float64) {
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		x := xs[i : i+4 : i+4]
		x[0] += v
		x[1] += v
		x[2] += v
		x[3] += v
	}
	for ; i < len(xs); i++ {
		xs[i] += v
	}
}

// opTime is the busy time of one op on a stage whose TP group starts at
// rank first, as the timeline charges it: compute by roofline, a collective
// by Collective plus one launch, a send its launch (the transfer runs on the
// link), a recv nothing (it waits).
func (c *QuickCache) opTime(plan *partition.Plan, op *partition.Op, res float64, firstTouch bool, first, tp int, phase partition.Phase) (float64, Bound, error) {
	g := &plan.System.GPU // 304 bytes: passed by address, never copied
	switch op.Kind {
	case partition.Recv:
		return 0, BoundBubble, nil
	case partition.Send:
		return launchS(g, phase), BoundLatency, nil
	case partition.AllReduce, partition.AllGather:
		if t, ok := c.table.of(plan).Time(op); ok {
			return t, BoundTable, nil
		}
		cc, err := c.collective(plan, op, first, tp)
		return cc.t + launchS(g, phase), cc.bound, err
	}
	oc := computeCost(g, plan.Model.DType, op, res, firstTouch, phase)
	if tab := c.table.of(plan); tab != nil {
		if t, ok := tab.Time(op); ok { // with the executor's op gap, as the timeline's (optable_gap.go)
			return max(graphTableS(g, phase, t+tab.opGapS())+stepFixedS(g, phase, op), hostOpS(g, phase)), BoundTable, nil
		}
	}
	return max(oc.TimeS, hostOpS(g, phase)), oc.Bound, nil
}

func (c *QuickCache) collective(plan *partition.Plan, op *partition.Op, first, tp int) (collCost, error) {
	return c.collectiveOf(plan, op.Kind, op.Bytes, op.Name, first, tp)
}

// collectiveOf is collective of an op of kind kind, payload bytes and
// name name (in an error).
func (c *QuickCache) collectiveOf(plan *partition.Plan, kind partition.Kind, bytes int64, name string, first, tp int) (collCost, error) {
	key := collCostKey{op: kind, bytes: bytes, tp: tp, off: first % plan.System.Topology.GPUsPerNode}
	// A layer's two all-reduces carry the same payload, and a pass's layer
	// ops are priced one after another: the last key asked for is most
	// often the next (lastColl, the map's entry for it).
	if c.lastColl.ok && c.lastColl.key == key {
		return c.lastColl.cc, nil
	}
	if cc, ok := c.colls[key]; ok {
		c.lastColl.ok, c.lastColl.key, c.lastColl.cc = true, key, cc
		return cc, nil
	}
	// The group's ranks, in the cache's scratch: neither the group's
	// analysis nor an estimate or error keeps the list.
	if cap(c.group) < tp {
		c.group = make([]int, tp)
	}
	group := c.group[:tp]
	for i := range group {
		group[i] = first + i
	}
	cop, _ := kind.Comm()
	est, err := c.programCollective(plan.System, cop, collGroupKey{op: kind, tp: tp, off: key.off}, group, bytes)
	if err != nil {
		return collCost{}, fmt.Errorf("sim: %s on ranks %s: %w", name, groupName(group), err)
	}
	cc := collCost{t: est.TimeS, bound: linkBound(est.Link)}
	if est.LatencyBound {
		cc.bound = BoundLatency
	}
	cc.bi = uint8(boundIndex(cc.bound))
	c.colls[key] = cc
	c.lastColl.ok, c.lastColl.key, c.lastColl.cc = true, key, cc
	return cc, nil
}

// collGroupKey is a TP group's shape for a collective: its op, its size
// and its first rank modulo the GPUs per node, which give the nodes it
// spans and its members on each (collCostKey without the payload).
type collGroupKey struct {
	op      partition.Kind
	tp, off int
}

// programCollective is the package's programCollective with the group's
// checks and analysis (newCollectiveGroup) done once per group shape
// (collGroupKey) in the cache: every group Quick prices is a stage's TP
// group in replica 0 of a plan on the cache's system, in range, of
// consecutive ranks, so groups of one shape span the same nodes with the
// same members on each (TestQuickCollectiveGroupsByShapeAreCollective).
func (c *QuickCache) programCollective(sys topology.System, op commcount.Op, gk collGroupKey, ranks []int, bytes int64) (CollectiveEstimate, error) {
	if err := collectiveArgs(op, bytes); err != nil {
		return CollectiveEstimate{Op: op, Bytes: bytes, Ranks: len(ranks)}, err
	}
	cg, ok := c.groups[gk]
	if !ok {
		var err error
		if cg, err = newCollectiveGroup(sys.Topology, op, ranks, c.opts); err != nil {
			return CollectiveEstimate{Op: op, Bytes: bytes, Ranks: len(ranks)}, err
		}
		cg.g = cg.g.withHops() // priced at every payload of its stages' collectives
		c.groups[gk] = cg
	}
	est, err := cg.estimate(sys, ranks, bytes, c.opts)
	if err != nil {
		return est, err
	}
	return preferCustom(sys, op, ranks, bytes, est), nil
}

// sendTime is the link time of a pass's send of bytes (passOps.sendBytes):
// the slowest class its TP ranks' parallel sends cross.
func (c *QuickCache) sendTime(plan *partition.Plan, bytes int64, out uint8) float64 {
	if bytes == 0 || out == 0 {
		return 0
	}
	var t float64
	for i, inter := range [2]bool{false, true} {
		if inter && out&2 == 0 || !inter && out&1 == 0 {
			continue
		}
		x, ok := c.p2ps[i][bytes]
		if !ok {
			x = P2P(representativeSystem(plan.System, inter), 0, 1, bytes).TimeS
			c.p2ps[i][bytes] = x
		}
		t = max(t, x)
	}
	return t
}

// sendBytes is the payload of the sends among ops.
func sendBytes(ops []partition.Op) int64 {
	var bytes int64
	for i := range ops { // in place: an op is 352 bytes
		if op := &ops[i]; op.Kind == partition.Send {
			bytes += op.Bytes
		}
	}
	return bytes
}

// representativeSystem is a two-GPU system whose ranks 0 and 1 are joined by
// the real system's intra-node (inter false) or inter-node link.
func representativeSystem(sys topology.System, inter bool) topology.System {
	t := sys.Topology
	if inter {
		t.Nodes, t.GPUsPerNode = 2, 1
	} else {
		t.Nodes, t.GPUsPerNode = 1, 2
	}
	return topology.System{GPU: sys.GPU, Topology: t}
}
