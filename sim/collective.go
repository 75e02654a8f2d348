package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// CollectiveOptions forces NCCL's choice the way NCCL_ALGO and NCCL_PROTO do.
// Empty means "pick the fastest", like NCCL's tuner.
//
// Algo accepts NCCL's names (ring, tree, nvls, nvlstree, and the unmodelled
// collnetdirect, collnetchain, pat) plus partbench's "hierarchical" (which is
// what nvlstree maps to). Both fields accept NCCL's list syntax: a comma list
// ("ring,tree"), an exclusion ("^nvls"), and per-function lists
// ("ring;allreduce:tree", where only the first list may lack a prefix).
// Names are case-insensitive; each algorithm name is read by
// commcount.ParseAlgorithm.
type CollectiveOptions struct {
	Algo, Proto string
	// AlgoFrom and ProtoFrom name where Algo and Proto were given (a flag
	// such as "--algo", a variable such as "NCCL_ALGO"): an error about the
	// value begins with that name. Empty: "algo" and "proto".
	AlgoFrom, ProtoFrom string
}

// OptionsFromEnv reads NCCL_ALGO and NCCL_PROTO through getenv (os.Getenv in
// the program, a map in tests). Syntax errors surface from Collective or
// Validate, naming the variable and its value.
func OptionsFromEnv(getenv func(string) string) CollectiveOptions {
	var o CollectiveOptions
	if getenv == nil {
		return o
	}
	if o.Algo = strings.TrimSpace(getenv("NCCL_ALGO")); o.Algo != "" {
		o.AlgoFrom = "NCCL_ALGO"
	}
	if o.Proto = strings.TrimSpace(getenv("NCCL_PROTO")); o.Proto != "" {
		o.ProtoFrom = "NCCL_PROTO"
	}
	return o
}

// Validate checks the syntax of both fields.
func (o CollectiveOptions) Validate() error {
	for _, op := range ncclFuncOps {
		if _, err := allowedAlgos(o, op); err != nil {
			return err
		}
		if _, err := allowedProtos(o, op); err != nil {
			return err
		}
	}
	return nil
}

// algoFrom and protoFrom are the names errors give the fields.
func (o CollectiveOptions) algoFrom() string  { return cmp.Or(o.AlgoFrom, "algo") }
func (o CollectiveOptions) protoFrom() string { return cmp.Or(o.ProtoFrom, "proto") }

// CollectiveEstimate is the modeled cost of one collective (or send/recv).
type CollectiveEstimate struct {
	Op commcount.Op `json:"op"`
	// Algo is ring, tree, nvls, hierarchical, p2p, oneshot, twoshot, or none
	// (one rank, or no bytes).
	Algo commcount.Algorithm `json:"algo"`
	// Proto is LL, LL128 or Simple ("" when Algo is none).
	Proto string `json:"proto"`
	// Bytes is the payload as nccl-tests reports "size" (all_gather: the output).
	Bytes int64 `json:"bytes"`
	// Ranks is the size of the group.
	Ranks int     `json:"ranks"`
	TimeS float64 `json:"time_s"`
	// LatencyTermS and BandwidthTermS are the two parts of TimeS.
	LatencyTermS   float64 `json:"latency_term_s"`
	BandwidthTermS float64 `json:"bandwidth_term_s"`
	// AlgBWBytesPerS = Bytes/TimeS; BusBWBytesPerS = AlgBW·BusBWFactor (nccl-tests).
	AlgBWBytesPerS float64 `json:"algbw_bytes_per_s"`
	BusBWBytesPerS float64 `json:"busbw_bytes_per_s"`
	// Link is the slowest link class the group crosses.
	Link topology.LinkClass `json:"link"`
	// LatencyBound says the latency term is larger than the bandwidth term.
	LatencyBound bool `json:"latency_bound"`
}

// BusBWFactor converts algorithm bandwidth to bus bandwidth as nccl-tests
// does (doc/PERFORMANCE.md): all_reduce 2(n−1)/n; all_gather and
// reduce_scatter (n−1)/n; broadcast, reduce, send and recv 1.
func BusBWFactor(op commcount.Op, n int) float64 {
	if n < 1 {
		return 0
	}
	switch op {
	case commcount.AllReduce:
		return 2 * float64(n-1) / float64(n)
	case commcount.AllGather, commcount.ReduceScatter:
		return float64(n-1) / float64(n)
	}
	return 1
}

// Collective models one NCCL collective over ranks (global rank numbers on
// sys.Topology) with a payload of bytes (nccl-tests "size"; all_gather: the
// gathered output). It evaluates every algorithm and protocol that can run on
// this group and returns the fastest, unless opt restricts the choice.
// Send and Recv take exactly two ranks (source, destination).
func Collective(sys topology.System, op commcount.Op, ranks []int, bytes int64, opt CollectiveOptions) (CollectiveEstimate, error) {
	est := CollectiveEstimate{Op: op, Bytes: bytes, Ranks: len(ranks)}
	if err := collectiveArgs(op, bytes); err != nil {
		return est, err
	}
	cg, err := newCollectiveGroup(sys.Topology, op, ranks, opt)
	if err != nil {
		return est, err
	}
	return cg.estimate(sys, ranks, bytes, opt)
}

// collectiveArgs is Collective's first checks: a known op and a size ≥ 0.
func collectiveArgs(op commcount.Op, bytes int64) error {
	if !knownOp(op) {
		return fmt.Errorf("unknown collective op %q (known: all_reduce, all_gather, reduce_scatter, broadcast, reduce, send, recv)", op)
	}
	if bytes < 0 {
		return fmt.Errorf("%s: negative size %d B", op, bytes)
	}
	return nil
}

// collectiveGroup is what Collective works out of an op on a rank list
// before it looks at the payload: the ranks checked, the algorithms and
// protocols the options allow for the op, and how the group sits on the
// topology (analyze: its size, the nodes it spans and its members per
// node). A caller pricing one group at many sizes, or many groups of the
// same shape (the same size, first rank modulo the GPUs per node, hence
// the same nodes spanned and members per node), works it out once
// (QuickCache).
type collectiveGroup struct {
	op     commcount.Op
	p2p    bool // send or recv: P2P, between ranks[0] and ranks[1]
	algos  map[commcount.Algorithm]bool
	protos map[string]bool
	g      group
}

// newCollectiveGroup is Collective's checks of ranks and options and its
// analysis of the group, for a known op.
func newCollectiveGroup(t topology.Topology, op commcount.Op, ranks []int, opt CollectiveOptions) (*collectiveGroup, error) {
	if err := checkRanks(t, ranks); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if !op.Collective() {
		if len(ranks) != 2 {
			return nil, fmt.Errorf("%s: point-to-point takes two ranks (source, destination), got %d", op, len(ranks))
		}
		return &collectiveGroup{op: op, p2p: true}, nil
	}
	algos, err := allowedAlgos(opt, op)
	if err != nil {
		return nil, err
	}
	protos, err := allowedProtos(opt, op)
	if err != nil {
		return nil, err
	}
	return &collectiveGroup{op: op, algos: algos, protos: protos, g: analyze(t, ranks)}, nil
}

// estimate is Collective of the group's op on ranks (the list cg was made
// from, or one of the same shape) for a payload of bytes ≥ 0.
func (cg *collectiveGroup) estimate(sys topology.System, ranks []int, bytes int64, opt CollectiveOptions) (CollectiveEstimate, error) {
	op := cg.op
	est := CollectiveEstimate{Op: op, Bytes: bytes, Ranks: len(ranks)}
	if cg.p2p {
		e := P2P(sys, ranks[0], ranks[1], bytes)
		e.Op = op
		return e, nil
	}
	algos, protos, g := cg.algos, cg.protos, cg.g
	est.Link = g.link
	if g.n == 1 || bytes == 0 {
		// One rank is a local copy (or nothing); no bytes is a no-op in NCCL.
		est.Algo = commcount.AlgoNone
		return est, nil
	}

	var best *candidate
	var refused bool // some algorithm the options allow cannot run, or runs with no protocol allowed
	for _, a := range ncclAlgos {
		if !algos[a] {
			continue
		}
		if g.refusal(op, a) != canRun {
			refused = true
			continue
		}
		ran := false
		for _, p := range Protocols {
			if !protos[p] {
				continue
			}
			c, ok := g.model(op, a, p, float64(bytes))
			if !ok {
				continue
			}
			ran = true
			if best == nil || c.latS+c.bwS < best.latS+best.bwS {
				cc := c
				best = &cc
			}
		}
		refused = refused || !ran
	}
	if best == nil {
		msg := fmt.Sprintf("no algorithm can run %s on ranks %s", op, rankList(ranks))
		if opt.Algo != "" || opt.Proto != "" {
			msg += fmt.Sprintf(" with algo %q proto %q", opt.Algo, opt.Proto)
		}
		if refused {
			msg += ": " + strings.Join(cg.refusals(opt), "; ")
		}
		return est, fmt.Errorf("%s", msg)
	}
	est.Algo, est.Proto = best.algo, best.proto
	est.LatencyTermS, est.BandwidthTermS = best.latS, best.bwS
	est.TimeS = best.latS + best.bwS
	est.LatencyBound = best.latS > best.bwS
	est.fillBW()
	return est, nil
}

// refusals words why each algorithm the options allow does not run the
// group's op, in estimate's order: it cannot (group.cannot), or none of
// its protocols is allowed.
func (cg *collectiveGroup) refusals(opt CollectiveOptions) []string {
	var out []string
	for _, a := range ncclAlgos {
		if !cg.algos[a] {
			continue
		}
		if why := cg.g.cannot(cg.op, a); why != "" {
			out = append(out, string(a)+": "+why)
			continue
		}
		ran := false
		for _, p := range protocolsOf(a) {
			ran = ran || cg.protos[p]
		}
		if !ran {
			out = append(out, fmt.Sprintf("%s: runs only with %s, excluded by the protocol setting %q", a, strings.Join(protocolsOf(a), ","), opt.Proto))
		}
	}
	return out
}

// P2P models a send/recv of bytes from src to dst: one hop over the path
// between them, LL for small messages and Simple otherwise (whichever is
// faster below NCCL's LL threshold). It does not validate the ranks; use
// Collective with commcount.Send for checked input.
func P2P(sys topology.System, src, dst int, bytes int64) CollectiveEstimate {
	if bytes < 0 {
		bytes = 0
	}
	e := CollectiveEstimate{Op: commcount.Send, Bytes: bytes, Ranks: 2}
	if src == dst {
		e.Algo, e.Ranks, e.Link = commcount.AlgoNone, 1, topology.Local
		return e
	}
	l := sys.Topology.Path(src, dst)
	e.Algo, e.Link = commcount.AlgoP2P, l.Class
	s := float64(bytes)
	bw := usableBW(l)
	try := func(p string) (float64, float64) {
		return l.LatencyS + protoHopOverheadS(l.Class, commcount.AlgoRing, p), s / (bw * ringFraction(p))
	}
	lat, bwt := try(ProtoSimple)
	e.Proto = ProtoSimple
	if bytes <= p2pLLThresholdBytes {
		if l2, b2 := try(ProtoLL); l2+b2 < lat+bwt {
			lat, bwt, e.Proto = l2, b2, ProtoLL
		}
	}
	e.LatencyTermS, e.BandwidthTermS = lat, bwt
	e.TimeS = lat + bwt
	e.LatencyBound = lat > bwt
	e.fillBW()
	return e
}

func (e *CollectiveEstimate) fillBW() {
	if e.TimeS > 0 {
		e.AlgBWBytesPerS = float64(e.Bytes) / e.TimeS
		e.BusBWBytesPerS = e.AlgBWBytesPerS * BusBWFactor(e.Op, e.Ranks)
	}
}

// ---------------------------------------------------------------------------
// The group: how its ranks sit on the topology.

type group struct {
	topo     topology.Topology
	n        int
	nodes    int // distinct nodes
	minPer   int // fewest members on one node
	maxPer   int // most members on one node
	link     topology.LinkClass
	hasIntra bool // some node holds ≥ 2 members
	hasInter bool // the group spans nodes
	par      collectiveParams
	// hops, when not nil, holds intraHopS and interHopS worked out
	// (withHops): a group priced at many sizes reads them from it.
	hops *hopTable
}

// hopTable is a group's intraHopS and interHopS for every algorithm that
// asks for them (ring, tree, hierarchical: hopAlgo) and every protocol
// (protoIndex): protocol.go keeps NCCL's figures in maps keyed by name,
// which each model of each estimate would otherwise read again.
type hopTable struct{ intra, inter [3][3]float64 }

// withHops is g with its hopTable worked out: the same intraHopS and
// interHopS, read from the table.
func (g group) withHops() group {
	var h hopTable
	for i, a := range [3]commcount.Algorithm{commcount.AlgoRing, commcount.AlgoTree, commcount.AlgoHierarchical} {
		for j, p := range Protocols {
			h.intra[i][j], h.inter[i][j] = g.intraHopOf(a, p), g.interHopOf(a, p)
		}
	}
	g.hops = &h
	return g
}

// hopAlgo is a's row in a hopTable, −1 for none.
func hopAlgo(a commcount.Algorithm) int {
	switch a {
	case commcount.AlgoRing:
		return 0
	case commcount.AlgoTree:
		return 1
	case commcount.AlgoHierarchical:
		return 2
	}
	return -1
}

// protoIndex is p's place in Protocols (a hopTable's column), −1 for none.
func protoIndex(p string) int {
	switch p {
	case ProtoLL:
		return 0
	case ProtoLL128:
		return 1
	case ProtoSimple:
		return 2
	}
	return -1
}

func analyze(t topology.Topology, ranks []int) group {
	per := map[int]int{}
	for _, r := range ranks {
		per[t.NodeOf(r)]++
	}
	g := group{topo: t, n: len(ranks), nodes: len(per), minPer: math.MaxInt, par: collectiveParamsOf(t)}
	for _, c := range per {
		g.minPer = min(g.minPer, c)
		g.maxPer = max(g.maxPer, c)
	}
	g.hasIntra = g.maxPer >= 2
	g.hasInter = g.nodes >= 2
	switch {
	case g.n <= 1:
		g.link = topology.Local
	case g.hasInter:
		g.link = topology.Network
	default:
		g.link = t.Intra.Class
	}
	return g
}

// nvlsNode says NVLink SHARP can reduce among k GPUs of one node.
func (g group) nvlsNode(k int) bool {
	return g.topo.Intra.Switch && g.topo.Intra.Class == topology.NVLink && k > 2
}

// refusal is why algorithm a cannot run op on this group, as a code
// (canRun if it can); cannot words it. The search asks it of every
// collective it prices, where most algorithms that cannot run are not
// worth a message: the words are written only for an error.
type refusal int

const (
	canRun refusal = iota
	treeNotAllReduce
	nvlsOp
	nvlsSpansNodes
	nvlsNoSwitch
	nvlsTooFew
	hierNotAllReduce
	hierOneNode
	hierUneven
	hierOnePerNode
)

func (g group) refusal(op commcount.Op, a commcount.Algorithm) refusal {
	switch a {
	case commcount.AlgoRing:
		return canRun
	case commcount.AlgoTree:
		if op != commcount.AllReduce {
			return treeNotAllReduce
		}
	case commcount.AlgoNVLS:
		switch {
		case op != commcount.AllReduce && op != commcount.AllGather && op != commcount.ReduceScatter:
			return nvlsOp
		case g.hasInter:
			return nvlsSpansNodes
		case g.topo.Intra.Class != topology.NVLink || !g.topo.Intra.Switch:
			return nvlsNoSwitch
		case g.n <= 2:
			return nvlsTooFew
		}
	case commcount.AlgoHierarchical:
		switch {
		case op != commcount.AllReduce:
			return hierNotAllReduce
		case !g.hasInter:
			return hierOneNode
		case g.minPer != g.maxPer:
			return hierUneven
		case g.minPer < 2:
			return hierOnePerNode
		}
	}
	return canRun
}

// cannot says why algorithm a cannot run op on this group ("" if it can).
func (g group) cannot(op commcount.Op, a commcount.Algorithm) string {
	switch g.refusal(op, a) {
	case treeNotAllReduce:
		return "NCCL runs trees for all_reduce only"
	case nvlsOp:
		return "NVLink SHARP runs all_reduce, all_gather and reduce_scatter only"
	case nvlsSpansNodes:
		return fmt.Sprintf("the group spans %d nodes and NVLink SHARP reduces inside one NVSwitch domain (across nodes use hierarchical, NCCL's nvlstree)", g.nodes)
	case nvlsNoSwitch:
		return fmt.Sprintf("needs an NVSwitch with in-switch reduction (intra_node.nvswitch = true); topology %q has %s (%s) inside a node",
			g.topo.Name, g.topo.Intra.Class, g.topo.Intra.Name)
	case nvlsTooFew:
		return fmt.Sprintf("needs more than 2 ranks, the group has %d", g.n)
	case hierNotAllReduce:
		return "hierarchical is an all_reduce algorithm (other collectives run as rings across nodes)"
	case hierOneNode:
		return "the group is inside one node"
	case hierUneven:
		return fmt.Sprintf("needs the same number of ranks on every node (has %d to %d)", g.minPer, g.maxPer)
	case hierOnePerNode:
		return "needs at least 2 ranks per node (with one per node it is a ring)"
	}
	return ""
}

// protocolsOf lists the protocols an algorithm supports.
func protocolsOf(a commcount.Algorithm) []string {
	if a == commcount.AlgoNVLS || a == commcount.AlgoHierarchical {
		return []string{ProtoSimple}
	}
	return Protocols
}

type candidate struct {
	algo      commcount.Algorithm
	proto     string
	latS, bwS float64
}

// model is the (latency, bandwidth) cost of op with algorithm a and protocol
// p for s bytes; ok is false if the combination does not exist.
func (g group) model(op commcount.Op, a commcount.Algorithm, p string, s float64) (candidate, bool) {
	c := candidate{algo: a, proto: p}
	supported := false
	for _, q := range protocolsOf(a) {
		supported = supported || q == p
	}
	if !supported {
		return c, false
	}
	switch a {
	case commcount.AlgoRing:
		c.latS, c.bwS = g.ring(op, p, s)
	case commcount.AlgoTree:
		c.latS, c.bwS = g.tree(p, s)
	case commcount.AlgoNVLS:
		c.latS, c.bwS = g.nvls(op, s)
	case commcount.AlgoHierarchical:
		c.latS, c.bwS = g.hierarchical(p, s)
	}
	c.latS += g.par.rampS(p, s)
	return c, true
}

// intraHopS and interHopS are the latency of one step on the intra-node and
// inter-node link for algorithm a and protocol p: link latency plus the
// protocol's per-hop overhead.
func (g group) intraHopS(a commcount.Algorithm, p string) float64 {
	if g.hops != nil {
		if i, j := hopAlgo(a), protoIndex(p); i >= 0 && j >= 0 {
			return g.hops.intra[i][j]
		}
	}
	return g.intraHopOf(a, p)
}

func (g group) interHopS(a commcount.Algorithm, p string) float64 {
	if g.hops != nil {
		if i, j := hopAlgo(a), protoIndex(p); i >= 0 && j >= 0 {
			return g.hops.inter[i][j]
		}
	}
	return g.interHopOf(a, p)
}

// intraHopOf and interHopOf work out intraHopS and interHopS.
func (g group) intraHopOf(a commcount.Algorithm, p string) float64 {
	h := g.topo.Intra.LatencyS + protoHopOverheadS(g.topo.Intra.Class, a, p)
	if a == commcount.AlgoRing && g.hasInter {
		// A ring that spans nodes paces every step by the network proxy.
		h = max(h, netPostOverheadS(p))
	}
	return h
}

func (g group) interHopOf(a commcount.Algorithm, p string) float64 {
	return g.topo.Inter.LatencyS + protoHopOverheadS(topology.Network, a, p)
}

// ringBW is the bandwidth of the ring's slowest edge (Simple protocol): the
// intra-node link per GPU, or, across nodes, the node boundary. Rail
// assumption (topology.Inter: one NIC per GPU, rail-aligned, as in a DGX):
// NCCL runs at least as many channels as a node has member GPUs and spreads
// their node crossings over those GPUs' NICs, so the boundary carries
// minPer NICs' worth of bandwidth — not one NIC's.
func (g group) ringBW() float64 {
	bw := math.Inf(1)
	if g.hasIntra {
		bw = usableBW(g.topo.Intra)
	}
	if g.hasInter {
		bw = min(bw, float64(g.minPer)*usableBW(g.topo.Inter))
	}
	return bw
}

// ring: all_reduce is a reduce-scatter then an all-gather, 2(n−1) steps of
// S/n each; all_gather and reduce_scatter n−1 steps; broadcast and reduce a
// pipelined chain through n−1 hops that moves S once.
func (g group) ring(op commcount.Op, p string, s float64) (latS, bwS float64) {
	n := g.n
	var steps, interSteps int
	var volume float64 // bytes each rank sends, as a multiple of S
	switch op {
	case commcount.AllReduce:
		steps, volume = 2*(n-1), 2*float64(n-1)/float64(n)
		interSteps = 2 * (g.nodes - 1)
	case commcount.AllGather, commcount.ReduceScatter:
		steps, volume = n-1, float64(n-1)/float64(n)
		interSteps = g.nodes - 1
	default: // broadcast, reduce
		steps, volume = n-1, 1
		interSteps = g.nodes - 1
	}
	latS = baseLatencyUS[commcount.AlgoRing][p]*1e-6 +
		float64(steps-interSteps)*g.intraHopS(commcount.AlgoRing, p) +
		float64(interSteps)*g.interHopS(commcount.AlgoRing, p)
	bwS = volume * s / (g.ringBW() * ringFraction(p))
	return latS, bwS
}

// tree: NCCL's all-reduce tree is a chain inside each node and a double
// binary tree between nodes; data goes up (reduce) and back down
// (broadcast), pipelined. Latency: 2·((maxPer−1) intra hops + ⌈log2 nodes⌉
// inter hops). Bandwidth: inside a node every GPU sends 2S (S/2 up and S/2
// down in each of the two trees), so the chain runs at B_intra/2; between
// nodes a node sends S each way when there are two nodes and 2S with more
// (interior in one tree, leaf in the other), over minPer NICs.
func (g group) tree(p string, s float64) (latS, bwS float64) {
	depth := 0
	if g.nodes > 1 {
		depth = int(math.Ceil(math.Log2(float64(g.nodes))))
	}
	latS = baseLatencyUS[commcount.AlgoTree][p]*1e-6 +
		2*(float64(g.maxPer-1)*g.intraHopS(commcount.AlgoTree, p)+float64(depth)*g.interHopS(commcount.AlgoTree, p))
	rate := math.Inf(1)
	if g.hasIntra {
		rate = usableBW(g.topo.Intra) / 2
	}
	if g.hasInter {
		k := 2.0
		if g.nodes == 2 {
			k = 1
		}
		rate = min(rate, float64(g.minPer)*usableBW(g.topo.Inter)/k)
	}
	bwS = s / (rate * treeFraction(p, g.hasInter))
	return latS, bwS
}

// nvlsBW is the usable bandwidth through the NVSwitch's multicast/reduction.
func (g group) nvlsBW() float64 { return usableBW(g.topo.Intra) * nvlsEfficiency }

// nvlsLatencyS is one in-switch operation among k GPUs: link latency plus
// the NVLS overhead, which grows with the number of GPUs that synchronize
// through the switch (protocol.go, collectiveParams).
func (g group) nvlsLatencyS(k int) float64 {
	return g.topo.Intra.LatencyS + g.par.nvlsOverheadS(k)
}

// nvls: all_reduce reads each rank's reduced 1/n shard through the switch
// (multimem.ld_reduce: every GPU serves S, receives S/n) and multicasts it
// back (multimem.st: sends S/n, receives S) — S·(1+1/n) each way per GPU.
// all_gather and reduce_scatter move S per GPU in one direction.
func (g group) nvls(op commcount.Op, s float64) (latS, bwS float64) {
	vol := 1.0
	if op == commcount.AllReduce {
		vol = 1 + 1/float64(g.n)
	}
	return g.nvlsLatencyS(g.n), vol * s / g.nvlsBW()
}

// hierarchical all-reduce over N nodes with k ranks each, three pipelined
// stages: an intra-node reduce-scatter (each GPU ends with a reduced 1/k
// shard), an all-reduce of that shard among the N GPUs of its rail (one NIC
// each), and an intra-node all-gather. On NVLS nodes the intra stages are
// NVLink SHARP (this is NCCL's NVLSTree); elsewhere they are rings. The rail
// all-reduce is a ring of N (2(N−1) hops, 2(N−1)/N·S/k per NIC) or a binary
// tree (2⌈log2 N⌉ hops, S/k per NIC for two nodes and 2S/k beyond, as
// NVLSTree does), whichever is faster at this size. Stages overlap chunk by
// chunk, so the bandwidth term is the slowest stage and the latency term the
// sum. Simple protocol only, as NCCL's NVLSTree.
func (g group) hierarchical(p string, s float64) (latS, bwS float64) {
	k, N := float64(g.minPer), float64(g.nodes)
	var intraLat, intraBW, interHop float64
	if g.nvlsNode(g.minPer) {
		intraLat = g.nvlsLatencyS(g.minPer)
		intraBW = (1 + 1/k) * s / g.nvlsBW()
		interHop = g.interHopS(commcount.AlgoHierarchical, p) // NCCL's NVLSTree network latency
	} else {
		intraLat = baseLatencyUS[commcount.AlgoRing][p]*1e-6 + 2*(k-1)*(g.topo.Intra.LatencyS+protoHopOverheadS(g.topo.Intra.Class, commcount.AlgoRing, p))
		intraBW = 2 * (k - 1) / k * s / (usableBW(g.topo.Intra) * ringFraction(p))
		interHop = g.interHopS(commcount.AlgoRing, p)
	}
	rail := usableBW(g.topo.Inter) * ringFraction(p)
	ringLat, ringBW := 2*(N-1)*interHop, 2*(N-1)/N*(s/k)/rail
	perNIC := 2.0
	if g.nodes == 2 {
		perNIC = 1
	}
	treeLat, treeBW := 2*math.Ceil(math.Log2(N))*interHop, perNIC*(s/k)/rail
	latS, bwS = intraLat+ringLat, max(intraBW, ringBW)
	if t, b := intraLat+treeLat, max(intraBW, treeBW); t+b < latS+bwS {
		latS, bwS = t, b
	}
	return latS, bwS
}

// ---------------------------------------------------------------------------
// Input checks and NCCL_ALGO / NCCL_PROTO parsing.

func knownOp(op commcount.Op) bool {
	switch op {
	case commcount.AllReduce, commcount.AllGather, commcount.ReduceScatter,
		commcount.Broadcast, commcount.Reduce, commcount.Send, commcount.Recv:
		return true
	}
	return false
}

func checkRanks(t topology.Topology, ranks []int) error {
	if len(ranks) == 0 {
		return fmt.Errorf("empty rank list")
	}
	size := t.Size()
	// Groups are mostly listed in increasing order: a strictly increasing
	// list has no rank twice, so only the range is checked. The first rank
	// out of range is the error the loop below would give first, as the
	// ranks before it are distinct. A list not in order is checked by the
	// loop below from its start.
	prev, inOrder := -1, true
	for _, r := range ranks {
		if r < 0 || r >= size {
			return fmt.Errorf("rank %d out of range: topology %q has ranks 0..%d", r, t.Name, size-1)
		}
		if r <= prev {
			inOrder = false
			break
		}
		prev = r
	}
	if inOrder {
		return nil
	}
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		if r < 0 || r >= size {
			return fmt.Errorf("rank %d out of range: topology %q has ranks 0..%d", r, t.Name, size-1)
		}
		if seen[r] {
			return fmt.Errorf("rank %d appears twice in %s", r, rankList(ranks))
		}
		seen[r] = true
	}
	return nil
}

func rankList(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = fmt.Sprint(r)
	}
	if len(s) > 12 {
		s = append(s[:6], "…", s[len(s)-1])
	}
	return "[" + strings.Join(s, " ") + "]"
}

// ncclFuncOps maps NCCL's function names (the prefixes of NCCL_ALGO and
// NCCL_PROTO per-function lists) to ops.
var ncclFuncOps = map[string]commcount.Op{
	"broadcast":     commcount.Broadcast,
	"reduce":        commcount.Reduce,
	"allgather":     commcount.AllGather,
	"reducescatter": commcount.ReduceScatter,
	"allreduce":     commcount.AllReduce,
}

// ncclAlgos are the NCCL algorithms the model has, the ones NCCL_ALGO
// chooses among, in the order Collective tries them.
var ncclAlgos = []commcount.Algorithm{commcount.AlgoRing, commcount.AlgoTree, commcount.AlgoNVLS, commcount.AlgoHierarchical}

// ncclUnmodelledAlgos are NCCL_ALGO names the model does not have: a list
// may name them, and they enable nothing.
var ncclUnmodelledAlgos = []string{"collnetdirect", "collnetchain", "collnet", "pat"}

// algoToken resolves one NCCL_ALGO token through commcount.ParseAlgorithm;
// ok is false for an NCCL algorithm the model does not have.
func algoToken(tok string) (a commcount.Algorithm, ok bool, err error) {
	if slices.Contains(ncclUnmodelledAlgos, strings.ToLower(tok)) {
		return "", false, nil
	}
	a, err = commcount.ParseAlgorithm(tok)
	if err == nil && !slices.Contains(ncclAlgos, a) {
		err = fmt.Errorf("%s is not an NCCL algorithm (NCCL_ALGO takes %s, and the unmodelled %s)", a, algoNames(ncclAlgos), strings.Join(ncclUnmodelledAlgos, ", "))
	}
	return a, err == nil, err
}

func algoNames(as []commcount.Algorithm) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

var protoTokens = map[string]string{"ll": ProtoLL, "ll128": ProtoLL128, "simple": ProtoSimple}

// protoToken resolves one NCCL_PROTO token.
func protoToken(tok string) (string, bool, error) {
	if p, ok := protoTokens[strings.ToLower(tok)]; ok {
		return p, true, nil
	}
	return "", false, fmt.Errorf("unknown protocol %q (known: LL, LL128, Simple)", tok)
}

func allowedAlgos(o CollectiveOptions, op commcount.Op) (map[commcount.Algorithm]bool, error) {
	set, err := parseNCCLList(o.algoFrom(), o.Algo, op, ncclAlgos, algoToken)
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("%s %q enables no algorithm the model has for %s (it models %s; CollNet and PAT are not modelled)",
			o.algoFrom(), o.Algo, op, algoNames(ncclAlgos))
	}
	return set, nil
}

func allowedProtos(o CollectiveOptions, op commcount.Op) (map[string]bool, error) {
	set, err := parseNCCLList(o.protoFrom(), o.Proto, op, Protocols, protoToken)
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("%s %q enables no protocol for %s", o.protoFrom(), o.Proto, op)
	}
	return set, nil
}

// parseNCCLList applies NCCL's list syntax (src/graph/tuning.cc parseList):
// entries separated by ';', each "func:list" or (first entry only) "list"; a
// list is comma-separated and may start with '^' to enable everything but its
// elements. Later entries override earlier ones for their function.
// resolve turns one token into a value; ok is false for a name that is
// known but enables nothing.
func parseNCCLList[T ~string](what, spec string, op commcount.Op, all []T, resolve func(tok string) (v T, ok bool, err error)) (map[T]bool, error) {
	set := map[T]bool{}
	for _, a := range all {
		set[a] = true
	}
	if strings.TrimSpace(spec) == "" {
		return set, nil
	}
	for i, entry := range strings.Split(spec, ";") {
		entry = strings.TrimSpace(entry)
		list := entry
		applies := true
		if pre, rest, ok := strings.Cut(entry, ":"); ok {
			f := strings.ToLower(strings.TrimSpace(pre))
			fop, known := ncclFuncOps[strings.ReplaceAll(f, "_", "")]
			if !known {
				return nil, fmt.Errorf("%s %q: unknown function %q (NCCL's are broadcast, reduce, allgather, reducescatter, allreduce)", what, spec, pre)
			}
			applies, list = fop == op, rest
		} else if i > 0 {
			return nil, fmt.Errorf("%s %q: every entry after the first needs a function prefix (e.g. allreduce:%s)", what, spec, entry)
		}
		list = strings.TrimSpace(list)
		exclude := strings.HasPrefix(list, "^")
		list = strings.TrimPrefix(list, "^")
		named := map[T]bool{}
		for _, tok := range strings.Split(list, ",") {
			v, ok, err := resolve(strings.TrimSpace(tok))
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", what, spec, err)
			}
			if ok {
				named[v] = true
			}
		}
		if !applies {
			continue
		}
		for _, a := range all {
			set[a] = named[a] != exclude
		}
	}
	for k, v := range set {
		if !v {
			delete(set, k)
		}
	}
	return set, nil
}
