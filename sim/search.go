package sim

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// This file holds the closed-form pipeline estimate (Quick) and the search
// over partitionings that ranks candidates by it. docs/search.md states the
// law, the candidate rules and the tolerance against the full timeline.

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
}

// kindOps are a stage kind's passes: one per prefill chunk, one decode step.
type kindOps struct {
	prefill          []passOps
	decode           passOps
	layerWS, extraWS int64 // reused weight bytes of one layer, and outside the layers
}

// proxyKey names the ops of one layout: passes depend on the TP degree,
// the micro-batch size and the prefill chunk, never on how many layers a
// stage holds (every layer's ops are the same) nor on the batch.
type proxyKey struct{ tp, mbs, chunk, pp int }

type stageKey struct {
	proxyKey
	kind   stageKind
	layers int
	off    int   // first rank of the stage modulo GPUs per node: the TP group's shape
	out    uint8 // link classes its outgoing sends cross: 1 intra-node, 2 inter-node
}

// stageCost is the busy time of one micro-batch's pass on a stage.
type stageCost struct {
	pre0, preN []float64 // per prefill chunk: micro-batch 0 (first touch of weights), later ones
	preSendS   []float64 // per prefill chunk: transfer time of the pass's send (0 if none)
	tailS      float64   // last chunk: time after the sample
	dec        float64
	decBounds  [8]float64
	decSendS   float64
}

type collCostKey struct {
	op      partition.Kind
	bytes   int64
	tp, off int
}

type collCost struct {
	t     float64
	bound Bound
}

type p2pKey struct {
	inter bool
	bytes int64
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
	opts   CollectiveOptions
	id     quickID
	have   bool
	passes map[proxyKey]*[4]*kindOps
	stages map[stageKey]*stageCost
	colls  map[collCostKey]collCost
	p2ps   map[p2pKey]float64
}

// NewQuickCache returns an empty cache; opts forces collective algorithms
// as in Options.Collectives.
func NewQuickCache(opts CollectiveOptions) *QuickCache {
	return &QuickCache{opts: opts}
}

func (c *QuickCache) reset(id quickID) {
	c.id, c.have = id, true
	c.passes = map[proxyKey]*[4]*kindOps{}
	c.stages = map[stageKey]*stageCost{}
	c.colls = map[collCostKey]collCost{}
	c.p2ps = map[p2pKey]float64{}
}

// Quick estimates one plan (see the package-level Quick).
func (c *QuickCache) Quick(plan *partition.Plan) (QuickEstimate, error) {
	w := plan.Config.Workload
	id := quickID{model: plan.Model, context: w.Context, output: w.OutputTokens, sys: plan.System}
	if !c.have || c.id != id {
		c.reset(id)
	}
	pk := proxyKey{tp: plan.TP, mbs: plan.MicrobatchSize, chunk: plan.PrefillChunk, pp: min(plan.PP, 3)}
	kinds, err := c.proxy(plan, pk)
	if err != nil {
		return QuickEstimate{}, err
	}
	P, T, m := plan.PP, plan.TP, float64(plan.Microbatches)
	topo := plan.System.Topology
	C := plan.PrefillChunks

	// Servers in pipeline order: stage 0, link 0→1, stage 1, …, stage P−1.
	// first/total/last are a server's time for the first pass, all passes,
	// and the last pass of prefill.
	nsv := 2*P - 1
	first := make([]float64, nsv)
	total := make([]float64, nsv)
	last := make([]float64, nsv)
	var busyPrefill, roundTrip, slowest, busyDecode float64
	var crit *stageCost
	for s := 0; s < P; s++ {
		kind := kindOf(s, P)
		a := s * T
		var out uint8
		if P > 1 {
			dst := (s + 1) * T
			if s == P-1 {
				dst = 0
			}
			out = outClasses(topo, a, dst, T)
		}
		key := stageKey{proxyKey: pk, kind: kind, layers: len(plan.StageLayers[s]), off: a % topo.GPUsPerNode, out: out}
		sc, err := c.stage(plan, key, kinds[kind], a)
		if err != nil {
			return QuickEstimate{}, err
		}
		// Prefill: micro-batch 0 of each chunk, then m−1 more.
		var A float64
		for ch := 0; ch < C; ch++ {
			A += sc.pre0[ch] + (m-1)*sc.preN[ch]
		}
		lastPass := sc.pre0[C-1]
		if m > 1 {
			lastPass = sc.preN[C-1]
		}
		busyPrefill += A
		first[2*s], total[2*s], last[2*s] = sc.pre0[0], A, lastPass
		if s == P-1 {
			total[2*s] -= sc.tailS
			last[2*s] -= sc.tailS
		} else {
			var X float64
			for ch := 0; ch < C; ch++ {
				X += m * sc.preSendS[ch]
			}
			first[2*s+1], total[2*s+1], last[2*s+1] = sc.preSendS[0], X, sc.preSendS[C-1]
		}
		// Decode.
		roundTrip += sc.dec + sc.decSendS
		slowest = max(slowest, sc.dec, sc.decSendS)
		busyDecode += m * sc.dec
		if crit == nil || sc.dec > crit.dec {
			crit = sc
		}
	}
	// TTFT: the last pass leaves the last stage no earlier than any server k
	// allows — the first pass reaching k, all passes through k, the last
	// pass leaving from k to the end.
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
	q.TokensPerS = float64(w.Batch) / q.TPOTS
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
func outClasses(t topology.Topology, src0, dst0, tp int) uint8 {
	var mask uint8
	for i := 0; i < tp && mask != 3; i++ {
		if t.NodeOf(src0+i) == t.NodeOf(dst0+i) {
			mask |= 1
		} else {
			mask |= 2
		}
	}
	return mask
}

// proxy returns the passes of every stage kind for a layout, built by
// partition from a plan of one layer per stage, one micro-batch of the real
// micro-batch size and the real prefill chunk: the same ops the real plan's
// Programs hold, once.
func (c *QuickCache) proxy(plan *partition.Plan, pk proxyKey) (*[4]*kindOps, error) {
	if k, ok := c.passes[pk]; ok {
		return k, nil
	}
	cfg := *plan.Config
	cfg.Name = "quick-proxy"
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
	pp, err := partition.NewPlan(&cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: quick estimate of %s: %w", plan.Config.Name, err)
	}
	if pp.PrefillChunks != plan.PrefillChunks {
		return nil, fmt.Errorf("sim: quick estimate of %s: proxy has %d prefill chunks, plan %d", plan.Config.Name, pp.PrefillChunks, plan.PrefillChunks)
	}
	var kinds [4]*kindOps
	for s := 0; s < pk.pp; s++ {
		r := pp.RankOf(s, 0)
		k := &kindOps{prefill: make([]passOps, pp.PrefillChunks)}
		pre := pp.Program(r, partition.Prefill)
		start := 0
		for ch := range k.prefill {
			end := start
			for end < len(pre.Ops) && pre.Ops[end].Chunk == ch {
				end++
			}
			k.prefill[ch] = splitPass(pre.Ops[start:end])
			start = end
		}
		dec := pp.Program(r, partition.Decode)
		k.decode = splitPass(dec.Ops)
		k.layerWS = workingSet(partition.Program{Ops: k.decode.layer})
		k.extraWS = workingSet(dec) - k.layerWS
		kinds[kindOf(s, pk.pp)] = k
	}
	c.passes[pk] = &kinds
	return &kinds, nil
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
	for k, op := range p.post {
		if op.Kind == partition.Sample {
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

// stage costs one stage shape, once per cache.
func (c *QuickCache) stage(plan *partition.Plan, key stageKey, k *kindOps, first int) (*stageCost, error) {
	if sc, ok := c.stages[key]; ok {
		return sc, nil
	}
	g := plan.System.GPU
	L := float64(key.layers)
	res := 1.0
	if ws := int64(key.layers)*k.layerWS + k.extraWS; ws > 0 {
		res = math.Min(1, float64(g.UsableL2Bytes())/float64(ws))
	}
	C := len(k.prefill)
	sc := &stageCost{pre0: make([]float64, C), preN: make([]float64, C), preSendS: make([]float64, C)}
	var bounds [8]float64
	pass := func(p *passOps, layerFirst, postFirst bool) (float64, error) {
		bounds = [8]float64{}
		var t float64
		for _, part := range []struct {
			ops   []partition.Op
			mult  float64
			first bool
		}{{p.pre, 1, false}, {p.layer, L, layerFirst}, {p.post, 1, postFirst}} {
			for i := range part.ops {
				ot, ob, err := c.opTime(plan, &part.ops[i], res, part.first, first, key.tp)
				if err != nil {
					return 0, err
				}
				t += part.mult * ot
				bounds[boundIndex(ob)] += part.mult * ot
			}
		}
		return t, nil
	}
	var err error
	for ch := 0; ch < C; ch++ {
		p := &k.prefill[ch]
		if sc.preN[ch], err = pass(p, false, false); err != nil {
			return nil, err
		}
		sc.pre0[ch] = sc.preN[ch]
		if ch == 0 || ch == C-1 {
			if sc.pre0[ch], err = pass(p, ch == 0, ch == C-1); err != nil {
				return nil, err
			}
		}
		sc.preSendS[ch] = c.sendTime(plan, p, key.out)
	}
	if lp := &k.prefill[C-1]; lp.tail > 0 {
		for i := len(lp.post) - lp.tail; i < len(lp.post); i++ {
			ot, _, err := c.opTime(plan, &lp.post[i], res, false, first, key.tp)
			if err != nil {
				return nil, err
			}
			sc.tailS += ot
		}
	}
	if sc.dec, err = pass(&k.decode, false, false); err != nil {
		return nil, err
	}
	sc.decBounds = bounds
	sc.decSendS = c.sendTime(plan, &k.decode, key.out)
	c.stages[key] = sc
	return sc, nil
}

// opTime is the busy time of one op on a stage whose TP group starts at
// rank first, as the timeline charges it: compute by roofline, a collective
// by Collective plus one launch, a send its launch (the transfer runs on the
// link), a recv nothing (it waits).
func (c *QuickCache) opTime(plan *partition.Plan, op *partition.Op, res float64, firstTouch bool, first, tp int) (float64, Bound, error) {
	g := plan.System.GPU
	switch op.Kind {
	case partition.Recv:
		return 0, BoundBubble, nil
	case partition.Send:
		return g.KernelLaunchS, BoundLatency, nil
	case partition.AllReduce, partition.AllGather:
		cc, err := c.collective(plan, op, first, tp)
		return cc.t + g.KernelLaunchS, cc.bound, err
	}
	oc := computeCost(g, plan.Model.DType, op, res, firstTouch)
	return oc.TimeS, oc.Bound, nil
}

func (c *QuickCache) collective(plan *partition.Plan, op *partition.Op, first, tp int) (collCost, error) {
	topo := plan.System.Topology
	key := collCostKey{op: op.Kind, bytes: op.Bytes, tp: tp, off: first % topo.GPUsPerNode}
	if cc, ok := c.colls[key]; ok {
		return cc, nil
	}
	group := make([]int, tp)
	for i := range group {
		group[i] = first + i
	}
	cop, _ := op.Kind.Comm()
	est, err := Collective(plan.System, cop, group, op.Bytes, c.opts)
	if err != nil {
		return collCost{}, fmt.Errorf("sim: %s on ranks %s: %w", op.Name, groupName(group), err)
	}
	cc := collCost{t: est.TimeS, bound: linkBound(est.Link)}
	if est.LatencyBound {
		cc.bound = BoundLatency
	}
	c.colls[key] = cc
	return cc, nil
}

// sendTime is the link time of a pass's send: the slowest class its TP
// ranks' parallel sends cross.
func (c *QuickCache) sendTime(plan *partition.Plan, p *passOps, out uint8) float64 {
	var bytes int64
	for _, op := range p.post {
		if op.Kind == partition.Send {
			bytes += op.Bytes
		}
	}
	if bytes == 0 || out == 0 {
		return 0
	}
	var t float64
	for _, inter := range []bool{false, true} {
		if inter && out&2 == 0 || !inter && out&1 == 0 {
			continue
		}
		key := p2pKey{inter, bytes}
		x, ok := c.p2ps[key]
		if !ok {
			x = P2P(representativeSystem(plan.System, inter), 0, 1, bytes).TimeS
			c.p2ps[key] = x
		}
		t = max(t, x)
	}
	return t
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

// ---------------------------------------------------------------------------
// Search.

// Objectives a search ranks by.
const (
	ObjectiveTPS  = "tps"  // highest output tokens per second
	ObjectiveTPOT = "tpot" // lowest time per output token
	ObjectiveTTFT = "ttft" // lowest time to first token
)

// Objectives lists the accepted objectives.
var Objectives = []string{ObjectiveTPS, ObjectiveTPOT, ObjectiveTTFT}

// Row statuses.
const (
	StatusFeasible   = "feasible"
	StatusViolates   = "violates"
	StatusDoesNotFit = "does_not_fit"
)

// DefaultMaxMicrobatches is the largest micro-batch count searched.
const DefaultMaxMicrobatches = 64

// SearchSpec says what to search: the model and workload of Config (its
// parallel section, hardware and topology are replaced) on System.
type SearchSpec struct {
	Config *configs.Config
	System topology.System
	// Objective is tps (default), tpot or ttft.
	Objective string
	// MaxTPOTS and MaxTTFTS are constraints in seconds; 0 means none.
	MaxTPOTS, MaxTTFTS float64
	// MaxMicrobatches bounds the micro-batch counts tried (default 64).
	MaxMicrobatches int
	Collectives     CollectiveOptions
	// Progress, when set, is called as candidates are evaluated.
	Progress func(done, total int)
}

// Candidate is one partitioning.
type Candidate struct {
	TP           int `json:"tp"`
	PP           int `json:"pp"`
	Microbatches int `json:"microbatches"`
	// Variant names the layer map: even, first-1, last-1 or ends-1
	// (docs/search.md).
	Variant string `json:"layer_variant"`
	// StageLayers is the number of layers on each stage.
	StageLayers []int `json:"stage_layers"`
}

// Name is a config name for the candidate, e.g. tp8pp2-m8 or tp4pp4-m16-first-1.
func (c Candidate) Name() string {
	n := fmt.Sprintf("tp%dpp%d-m%d", c.TP, c.PP, c.Microbatches)
	if c.Variant != VariantEven {
		n += "-" + c.Variant
	}
	return n
}

// LayerMap is the stage of every layer, or nil for the even split.
func (c Candidate) LayerMap() []int {
	if c.Variant == VariantEven {
		return nil
	}
	var m []int
	for s, n := range c.StageLayers {
		for i := 0; i < n; i++ {
			m = append(m, s)
		}
	}
	return m
}

// LayerSummary writes the layers per stage run-length coded: "6,5×2" is a
// stage of 6 layers then two stages of 5.
func (c Candidate) LayerSummary() string {
	var parts []string
	for i := 0; i < len(c.StageLayers); {
		j := i
		for j < len(c.StageLayers) && c.StageLayers[j] == c.StageLayers[i] {
			j++
		}
		p := strconv.Itoa(c.StageLayers[i])
		if j-i > 1 {
			p += "×" + strconv.Itoa(j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return strings.Join(parts, ",")
}

// Layer map variants.
const (
	VariantEven  = "even"    // partition's even split, earlier stages take the remainder
	VariantFirst = "first-1" // the first stage one layer lighter, the rest split evenly
	VariantLast  = "last-1"  // the last stage one layer lighter, the rest split evenly
	VariantEnds  = "ends-1"  // both ends one layer lighter, the middle split evenly
)

// evenSplit divides n layers over k stages, earlier stages taking the remainder.
func evenSplit(n, k int) []int {
	out := make([]int, k)
	for s := range out {
		out[s] = n / k
		if s < n%k {
			out[s]++
		}
	}
	return out
}

// LayerVariants lists the layer maps searched for layers over pp stages:
// the even split and, when layers % pp ≠ 0 or ends (the model has an
// embedding or LM head), the maps with the first and/or last stage one
// layer lighter than in the even split; every stage keeps at least one
// layer and duplicates are dropped.
func LayerVariants(layers, pp int, ends bool) []Candidate {
	even := evenSplit(layers, pp)
	out := []Candidate{{Variant: VariantEven, StageLayers: even}}
	if pp < 2 || (layers%pp == 0 && !ends) {
		return out
	}
	add := func(v string, counts []int) {
		for _, o := range out {
			if equalInts(o.StageLayers, counts) {
				return
			}
		}
		out = append(out, Candidate{Variant: v, StageLayers: counts})
	}
	f, l := even[0]-1, even[pp-1]-1
	if f >= 1 {
		add(VariantFirst, append([]int{f}, evenSplit(layers-f, pp-1)...))
	}
	if l >= 1 {
		add(VariantLast, append(evenSplit(layers-l, pp-1), l))
	}
	if pp >= 3 && f >= 1 && l >= 1 {
		mid := evenSplit(layers-f-l, pp-2)
		ok := true
		for _, n := range mid {
			ok = ok && n >= 1
		}
		if ok {
			add(VariantEnds, append(append([]int{f}, mid...), l))
		}
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Factorization is one tp × pp = GPUs, with why it is not searched.
type Factorization struct {
	TP       int    `json:"tp"`
	PP       int    `json:"pp"`
	Excluded string `json:"excluded,omitempty"`
}

// SearchRow is one candidate's verdict.
type SearchRow struct {
	Candidate
	// Rank is the position among feasible candidates by the objective
	// (1 = best); 0 for the others.
	Rank           int    `json:"rank"`
	Status         string `json:"status"`
	Reason         string `json:"reason,omitempty"`
	MicrobatchSize int    `json:"microbatch_size"`
	PrefillChunk   int    `json:"prefill_chunk,omitempty"`
	PrefillChunks  int    `json:"prefill_chunks,omitempty"`
	// MemoryBytes is the largest rank's need.
	MemoryBytes   int64          `json:"max_memory_bytes,omitempty"`
	CapacityBytes int64          `json:"capacity_bytes,omitempty"`
	Quick         *QuickEstimate `json:"quick,omitempty"`
	// Full is the discrete-event timeline's verdict (top candidates only).
	Full *QuickEstimate `json:"full,omitempty"`
	// TPOTRelDiff is (quick − full) / full TPOT.
	TPOTRelDiff *float64 `json:"tpot_rel_diff,omitempty"`
	// FullDecodeSteps is the decode steps the full timeline ran (see Refine).
	FullDecodeSteps int       `json:"full_decode_steps,omitempty"`
	FullEstimate    *Estimate `json:"-"`

	index int
}

// SearchResult is every candidate of a search, best first.
type SearchResult struct {
	Model          string          `json:"model"`
	Hardware       string          `json:"hardware"`
	Topology       string          `json:"topology"`
	GPUs           int             `json:"gpus"`
	Objective      string          `json:"objective"`
	MaxTPOTS       float64         `json:"max_tpot_s,omitempty"`
	MaxTTFTS       float64         `json:"max_ttft_s,omitempty"`
	Factorizations []Factorization `json:"factorizations"`
	// Enumerated counts candidates; each is feasible, violates a
	// constraint, or does not fit in memory.
	Enumerated     int            `json:"enumerated"`
	Feasible       int            `json:"feasible"`
	PrunedMemory   int            `json:"pruned_memory"`
	PrunedByReason map[string]int `json:"pruned_by_reason"`
	Violating      int            `json:"violating"`
	// ViolatingBy counts violations per constraint (a candidate may break both).
	ViolatingBy    map[string]int `json:"violating_by"`
	ElapsedS       float64        `json:"elapsed_s"`
	CandidatesPerS float64        `json:"candidates_per_s"`
	FullTop        int            `json:"full_top"`
	Rows           []SearchRow    `json:"rows"`
}

// Check validates a spec, naming the field at fault.
func (sp *SearchSpec) Check() error {
	if sp.Config == nil {
		return fmt.Errorf("search: no model config")
	}
	if sp.Objective == "" {
		sp.Objective = ObjectiveTPS
	}
	switch sp.Objective {
	case ObjectiveTPS, ObjectiveTPOT, ObjectiveTTFT:
	default:
		return fmt.Errorf("objective: must be one of %s (got %q)", strings.Join(Objectives, ", "), sp.Objective)
	}
	if sp.MaxTPOTS < 0 || sp.MaxTTFTS < 0 {
		return fmt.Errorf("constraints: limits must be ≥ 0 (got tpot %g s, ttft %g s)", sp.MaxTPOTS, sp.MaxTTFTS)
	}
	if sp.MaxMicrobatches == 0 {
		sp.MaxMicrobatches = DefaultMaxMicrobatches
	}
	if sp.MaxMicrobatches < 1 {
		return fmt.Errorf("max micro-batches: must be ≥ 1 (got %d)", sp.MaxMicrobatches)
	}
	if err := sp.System.Topology.Validate("topology"); err != nil {
		return err
	}
	return sp.System.GPU.Validate("hardware")
}

// Enumerate lists every candidate of a spec, and every factorization of the
// GPU count with why it is excluded.
func (sp *SearchSpec) Enumerate() ([]Candidate, []Factorization) {
	m := sp.Config.Model
	gpus := sp.System.Topology.Size()
	maxM := sp.MaxMicrobatches
	if maxM == 0 {
		maxM = DefaultMaxMicrobatches
	}
	var cands []Candidate
	var facts []Factorization
	for tp := 1; tp <= gpus; tp++ {
		if gpus%tp != 0 {
			continue
		}
		f := Factorization{TP: tp, PP: gpus / tp}
		var why []string
		for _, d := range []struct {
			name string
			v    int
		}{{"heads", m.Heads}, {"kv_heads", m.KVHeads}, {"ffn", m.FFN}} {
			if d.v%tp != 0 {
				why = append(why, fmt.Sprintf("tp %d does not divide %s %d", tp, d.name, d.v))
			}
		}
		if f.PP > m.Layers {
			why = append(why, fmt.Sprintf("pp %d exceeds layers %d", f.PP, m.Layers))
		}
		f.Excluded = strings.Join(why, "; ")
		facts = append(facts, f)
		if f.Excluded != "" {
			continue
		}
		variants := LayerVariants(m.Layers, f.PP, m.Embeddings || m.LMHead)
		for mb := 1; mb <= maxM; mb++ {
			if sp.Config.Workload.Batch%mb != 0 {
				continue
			}
			for _, v := range variants {
				v.TP, v.PP, v.Microbatches = tp, f.PP, mb
				cands = append(cands, v)
			}
		}
	}
	return cands, facts
}

// CandidateConfig is the config of one candidate: the spec's model and
// workload with the candidate's layout on the spec's system.
func (sp *SearchSpec) CandidateConfig(c Candidate) *configs.Config {
	n := *sp.Config
	n.Name = c.Name()
	n.Description = fmt.Sprintf("search candidate: TP=%d × PP=%d, %d micro-batches, layers %s", c.TP, c.PP, c.Microbatches, c.LayerSummary())
	n.Workload.Phases = append([]string(nil), sp.Config.Workload.Phases...)
	n.Parallel = configs.Parallel{TP: c.TP, PP: c.PP, Microbatches: c.Microbatches, LayerMap: c.LayerMap(),
		Schedule: "fill-drain", PrefillChunk: sp.Config.Parallel.PrefillChunk}
	n.Hardware = configs.Hardware{Preset: sp.Config.Hardware.Preset, GPU: sp.System.GPU}
	n.Topology = configs.Topology{Topology: sp.System.Topology}
	return &n
}

var noFit = regexp.MustCompile(`weights ([0-9.]+) \+ KV cache ([0-9.]+) \+ activations ([0-9.]+) at prefill chunk [0-9]+\), usable HBM is ([0-9.]+) GB`)

// fitReason names what keeps a plan out of memory, from partition's error.
func fitReason(err error) (string, bool) {
	msg := err.Error()
	if !strings.Contains(msg, "does not fit") {
		return "", false
	}
	sub := noFit.FindStringSubmatch(msg)
	if sub == nil {
		return "memory", true
	}
	var v [4]float64
	for i := range v {
		v[i], _ = strconv.ParseFloat(sub[i+1], 64)
	}
	switch w, kv, capGB := v[0], v[1], v[3]; {
	case w > capGB:
		return "weights exceed usable HBM", true
	case w+kv > capGB:
		return "weights + KV cache exceed usable HBM", true
	}
	return "activations do not fit even at the smallest prefill chunk", true
}

// Search evaluates every candidate with Quick, prunes those that do not fit
// in memory (partition.NewPlan) and ranks the rest by the objective under
// the constraints.
func Search(spec SearchSpec) (*SearchResult, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	start := time.Now()
	cands, facts := spec.Enumerate()
	res := &SearchResult{Model: spec.Config.Model.Name, Hardware: spec.System.GPU.Name, Topology: spec.System.Topology.Name,
		GPUs: spec.System.Topology.Size(), Objective: spec.Objective, MaxTPOTS: spec.MaxTPOTS, MaxTTFTS: spec.MaxTTFTS,
		Factorizations: facts, Enumerated: len(cands), PrunedByReason: map[string]int{}, ViolatingBy: map[string]int{}}
	cache := NewQuickCache(spec.Collectives)
	for i, c := range cands {
		row := SearchRow{Candidate: c, index: i, MicrobatchSize: spec.Config.Workload.Batch / c.Microbatches}
		plan, err := partition.NewPlan(spec.CandidateConfig(c))
		if err != nil {
			reason, memory := fitReason(err)
			if !memory {
				return nil, fmt.Errorf("search: candidate %s: %w", c.Name(), err)
			}
			row.Status, row.Reason = StatusDoesNotFit, reason
			res.PrunedMemory++
			res.PrunedByReason[reason]++
		} else {
			q, err := cache.Quick(plan)
			if err != nil {
				return nil, fmt.Errorf("search: candidate %s: %w", c.Name(), err)
			}
			row.Quick = &q
			row.PrefillChunk, row.PrefillChunks = plan.PrefillChunk, plan.PrefillChunks
			for _, r := range plan.Ranks {
				if r.Memory.TotalBytes > row.MemoryBytes {
					row.MemoryBytes, row.CapacityBytes = r.Memory.TotalBytes, r.Memory.CapacityBytes
				}
			}
			var why []string
			if spec.MaxTPOTS > 0 && q.TPOTS > spec.MaxTPOTS {
				why = append(why, fmt.Sprintf("TPOT %.3g ms above %.3g ms", q.TPOTS*1e3, spec.MaxTPOTS*1e3))
				res.ViolatingBy["max_tpot"]++
			}
			if spec.MaxTTFTS > 0 && q.TTFTS > spec.MaxTTFTS {
				why = append(why, fmt.Sprintf("TTFT %.3g s above %.3g s", q.TTFTS, spec.MaxTTFTS))
				res.ViolatingBy["max_ttft"]++
			}
			row.Status = StatusFeasible
			if len(why) > 0 {
				row.Status, row.Reason = StatusViolates, strings.Join(why, "; ")
				res.Violating++
			} else {
				res.Feasible++
			}
		}
		res.Rows = append(res.Rows, row)
		if spec.Progress != nil && (i%8 == 7 || i == len(cands)-1) {
			spec.Progress(i+1, len(cands))
		}
	}
	sortRows(res.Rows, spec.Objective)
	for i := range res.Rows {
		if res.Rows[i].Status != StatusFeasible {
			break
		}
		res.Rows[i].Rank = i + 1
	}
	res.ElapsedS = time.Since(start).Seconds()
	if res.ElapsedS > 0 {
		res.CandidatesPerS = float64(res.Enumerated) / res.ElapsedS
	}
	return res, nil
}

// objectiveValue is smaller-is-better.
func objectiveValue(q *QuickEstimate, objective string) float64 {
	switch objective {
	case ObjectiveTPOT:
		return q.TPOTS
	case ObjectiveTTFT:
		return q.TTFTS
	}
	return -q.TokensPerS
}

// sortRows orders feasible rows by the objective, then violating ones the
// same way, then rows that do not fit in enumeration order. Ties go to the
// lower TPOT, then TTFT, then memory, then enumeration order.
func sortRows(rows []SearchRow, objective string) {
	class := map[string]int{StatusFeasible: 0, StatusViolates: 1, StatusDoesNotFit: 2}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if class[a.Status] != class[b.Status] {
			return class[a.Status] < class[b.Status]
		}
		if a.Quick == nil || b.Quick == nil {
			return a.index < b.index
		}
		for _, k := range [][2]float64{
			{objectiveValue(a.Quick, objective), objectiveValue(b.Quick, objective)},
			{a.Quick.TPOTS, b.Quick.TPOTS}, {a.Quick.TTFTS, b.Quick.TTFTS},
			{float64(a.MemoryBytes), float64(b.MemoryBytes)},
		} {
			if k[0] != k[1] {
				return k[0] < k[1]
			}
		}
		return a.index < b.index
	})
}

// Refine re-runs the full discrete-event estimate on the first top rows
// that fit (feasible first, then violating), so Quick's error is visible
// where it matters. opts.DecodeSteps (default SearchDecodeSteps) is where
// each re-run starts; when its TPOT differs from Quick's by more than
// QuickTolerance it is repeated with twice the steps, up to four times the
// start, since an unbalanced pipeline's timeline can take that long to
// reach steady state. progress, when set, is called after each row.
func (r *SearchResult) Refine(spec SearchSpec, top int, opts Options, progress func(done, total int)) error {
	if opts.Collectives == (CollectiveOptions{}) {
		opts.Collectives = spec.Collectives
	}
	if opts.DecodeSteps == 0 {
		opts.DecodeSteps = SearchDecodeSteps
	}
	var idx []int
	for i := range r.Rows {
		if len(idx) < top && r.Rows[i].Quick != nil {
			idx = append(idx, i)
		}
	}
	for n, i := range idx {
		row := &r.Rows[i]
		plan, err := partition.NewPlan(spec.CandidateConfig(row.Candidate))
		if err != nil {
			return fmt.Errorf("search: candidate %s: %w", row.Name(), err)
		}
		o := opts
		for {
			e, err := EstimatePlan(plan, o)
			if err != nil {
				return fmt.Errorf("search: candidate %s: %w", row.Name(), err)
			}
			f := FromEstimate(e)
			row.Full, row.FullEstimate, row.FullDecodeSteps = &f, e, o.DecodeSteps
			d := (row.Quick.TPOTS - f.TPOTS) / f.TPOTS
			row.TPOTRelDiff = &d
			if math.Abs(d) <= QuickTolerance || o.DecodeSteps >= 4*opts.DecodeSteps {
				break
			}
			o.DecodeSteps *= 2
		}
		if progress != nil {
			progress(n+1, len(idx))
		}
	}
	r.FullTop = len(idx)
	return nil
}

// SyntheticSearchSpec is the benchmark's search: a large dense model
// (128 layers, hidden 16384, 128 heads and KV heads, gated ffn 53248,
// vocab 128256 with embedding and LM head, bf16), batch 4096 at context
// 4096, on gpus H100s in DGX nodes of 8 (the h100-sxm and dgx-h100x2
// presets' GPU and links). gpus must be a multiple of 8.
func SyntheticSearchSpec(gpus int) (SearchSpec, error) {
	if gpus < 8 || gpus%8 != 0 || gpus/8 > 4096 {
		return SearchSpec{}, fmt.Errorf("gpus: must be a multiple of 8 in [8, 32768] (got %d)", gpus)
	}
	gpu, dgx, err := configs.LoadSystem("h100-sxm", "dgx-h100x2")
	if err != nil {
		return SearchSpec{}, err
	}
	topo := topology.Topology{Name: fmt.Sprintf("dgx-h100x%d", gpus/8), Nodes: gpus / 8, GPUsPerNode: 8, Intra: dgx.Intra, Inter: dgx.Inter}
	cfg := &configs.Config{
		Version: configs.SchemaVersion, Name: "synthetic-dense128",
		Model: configs.Model{Name: "synthetic-dense128", Layers: 128, Hidden: 16384, Heads: 128, KVHeads: 128, HeadDim: 128,
			FFN: 53248, GatedMLP: true, Vocab: 128256, Embeddings: true, LMHead: true, DType: "bf16"},
		Workload: configs.Workload{Batch: 4096, Context: 4096, OutputTokens: 256, Phases: []string{"prefill", "decode"}},
		Parallel: configs.Parallel{Microbatches: 1, Schedule: "fill-drain"}, // the search fills in each candidate's
		Hardware: configs.Hardware{Preset: "h100-sxm", GPU: gpu},
		Topology: configs.Topology{Topology: topo},
		Run:      configs.Run{Iterations: 1},
	}
	return SearchSpec{Config: cfg, System: topology.System{GPU: gpu, Topology: topo}}, nil
}

// SearchDecodeSteps is the decode steps the full re-run of top candidates
// starts with: an unbalanced pipeline needs more than EstimatePlan's default
// 6 to reach steady state (docs/search.md).
const SearchDecodeSteps = 12

// QuickTolerance is the stated agreement of Quick with the full timeline in
// steady state, on TTFT and TPOT (docs/search.md).
const QuickTolerance = 0.005
