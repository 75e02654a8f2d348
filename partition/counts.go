package partition

import (
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// Counts is what a Program calls and sends, under the commcount definitions:
// exactly what the communication layer must count when exec runs it.
func (p *Plan) Counts(prog Program) commcount.Snapshot {
	c := commcount.New()
	for _, op := range prog.Ops {
		cop, ok := op.Kind.Comm()
		if !ok {
			continue
		}
		c.Call(cop, op.Bytes)
		elem := int(op.Bytes / int64(op.Elems))
		switch op.Kind {
		case AllReduce, AllGather:
			n := len(op.Group)
			if n <= 1 {
				continue
			}
			pos := indexOf(op.Group, prog.Rank)
			next := op.Group[(pos+1)%n]
			var msgs, wire int64
			if op.Kind == AllReduce {
				msgs, wire = commcount.RingAllReduceWire(n, pos, op.Elems, elem)
			} else {
				msgs, wire = commcount.RingAllGatherWire(n, op.Elems/n, elem)
			}
			c.Messages(next, msgs, wire)
		case Send:
			c.Message(op.Peer, op.Bytes)
		}
	}
	return c.Snapshot()
}

func indexOf(xs []int, v int) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

// CommSummary is a phase's communication under each named definition.
type CommSummary struct {
	// Logical operations over the whole model for one micro-batch's pass
	// through one replica: one all-reduce in one TP group is 1 call; one
	// stage-boundary transfer is 1 send however many TP ranks carry it.
	CollectiveCallsPerMicrobatch int `json:"collective_calls_per_microbatch"`
	P2PSendsPerMicrobatch        int `json:"p2p_sends_per_microbatch"`
	// TokenSendsPerMicrobatch are the sampled tokens returned from the last
	// stage to the first (pipelines only), counted apart from activations.
	TokenSendsPerMicrobatch int `json:"token_sends_per_microbatch"`
	// Per rank over the whole phase (prefill: all chunks; decode: one step):
	// NCCL calls (collectives + sends + recvs) and point-to-point messages
	// (a ring all-reduce over n ranks is 2(n−1) messages per rank).
	// Held by runs of ranks alike (PerRank), written as lists.
	CallsPerRank    PerRank `json:"calls_per_rank"`
	MessagesPerRank PerRank `json:"messages_per_rank"`
	// BytesByLink sums every rank's wire bytes by the class of link to the peer.
	BytesByLink map[topology.LinkClass]int64 `json:"bytes_by_link"`
}

// Comm summarizes the communication of a phase. Every rank of a stage, in
// every replica, runs its stage's ops with its own TP index and peers, so
// one Program per stage is built and each rank's counts follow from it: the
// calls and messages are the stage's, and the wire bytes each rank sends
// (which for a ring all-reduce depend on its position) are counted against
// the link to its own peer. The result is what Counts over every rank's
// Program gives (partition/counts_test.go holds the two equal).
func (p *Plan) Comm(phase Phase) CommSummary {
	return p.CommOf(phase, p.Program)
}

// CommOf is Comm reading each stage's Program (of its TP index 0 rank)
// from program, which must return what Plan.Program does: for a caller that
// holds the plan's Programs already and would otherwise have them built
// twice.
func (p *Plan) CommOf(phase Phase, program func(rank int, phase Phase) Program) CommSummary {
	s := CommSummary{BytesByLink: map[topology.LinkClass]int64{}}
	n := p.Size()
	var callsOf, msgsOf perRankBuilder // a run per stage and replica
	var collectiveOps, activationSends, tokenSends int
	ring := map[ringKey][]int64{} // wire bytes by ring position, summed (ringWireSums)
	topo := p.System.Topology
	var links linkSums // BytesByLink, summed without a map access per rank
	// A middle stage's counts are its kind's (StageKind): its Program is
	// the kind's first one's but for its labels (ProgramLike), its sends go
	// one stage on. They are read once per kind, the sends moved.
	var kinds []stageComm
	var sends []sendUse
	for st := 0; st < p.PP; st++ {
		var sc *stageComm
		k := p.StageKindOf(st)
		middle := !k.First && !k.Last
		for i := range kinds {
			if middle && kinds[i].kind == k {
				sc = &kinds[i]
				break
			}
		}
		if sc == nil {
			c := p.stageCommOf(program(p.RankOf(st, 0), phase), phase)
			c.kind, c.stage = k, st
			if middle {
				kinds = append(kinds, c)
				sc = &kinds[len(kinds)-1]
			} else {
				sc = &c
			}
		}
		calls, msgs, colls := sc.calls, sc.msgs, sc.colls
		sends = sends[:0]
		for _, u := range sc.sends {
			sends = append(sends, sendUse{stage: u.stage - sc.stage + st, bytes: u.bytes})
		}
		collectiveOps += sc.collectiveOps
		activationSends += sc.activationSends
		tokenSends += sc.tokenSends
		for i := range colls {
			c := &colls[i]
			if ring[c.key] == nil {
				ring[c.key] = ringWireSums(c.key)
			}
			c.wire = ring[c.key]
		}
		for d := 0; d < p.DP; d++ {
			a := p.RankIn(d, st, 0)
			callsOf.add(a, p.TP, calls)
			msgsOf.add(a, p.TP, msgs)
			// Bytes by link class, one path look-up per run of TP
			// indices whose link is one (NodeRuns): rank a+t's ring
			// successor is a+t+1, the last's is a; a send goes to the
			// same TP index of its stage.
			if len(colls) > 0 {
				addRing := func(t0, t1, next int) {
					var wire int64
					for _, c := range colls {
						wire += int64(c.count) * (c.wire[t1] - c.wire[t0])
					}
					links.add(topo.Path(a+t0, next).Class, wire)
				}
				NodeRuns(a, a+1, p.TP-1, topo.GPUsPerNode, func(t0, t1 int) { addRing(t0, t1, a+t0+1) })
				addRing(p.TP-1, p.TP, a)
			}
			for _, sd := range sends {
				b := p.RankIn(d, sd.stage, 0)
				NodeRuns(a, b, p.TP, topo.GPUsPerNode, func(t0, t1 int) { links.add(topo.Path(a+t0, b+t0).Class, int64(t1-t0)*sd.bytes) })
			}
		}
	}
	for _, l := range links {
		s.BytesByLink[l.class] += l.bytes
	}
	// Each logical collective and each boundary transfer appears once on
	// every one of the TP ranks that carries it, in every replica (each
	// replica passes its own micro-batch 0).
	s.CallsPerRank, s.MessagesPerRank = callsOf.done(n), msgsOf.done(n)
	k := p.TP * p.DP
	s.CollectiveCallsPerMicrobatch = collectiveOps / k
	s.P2PSendsPerMicrobatch = activationSends / k
	s.TokenSendsPerMicrobatch = tokenSends / k
	return s
}

// stageComm is what CommOf reads of one stage's Program: its calls and
// messages per rank, its ring collectives and sends (to stages, absolute),
// and its logical collectives and sends of the micro-batch counted, times
// TP × DP; kind and stage are the stage it was read from.
type stageComm struct {
	kind                                       StageKind
	stage                                      int
	calls, msgs                                int64
	colls                                      []ringUse
	sends                                      []sendUse
	collectiveOps, activationSends, tokenSends int
}

// stageCommOf reads prog, a stage's Program of phase (TP index 0).
func (p *Plan) stageCommOf(prog Program, phase Phase) stageComm {
	var c stageComm
	for i := range prog.Ops {
		op := &prog.Ops[i] // not a copy of each (large) Op
		if _, ok := op.Kind.Comm(); !ok {
			continue
		}
		c.calls++
		switch op.Kind {
		case AllReduce, AllGather:
			if g := len(op.Group); g > 1 {
				k := ringKey{kind: op.Kind, n: g, elems: op.Elems, elem: int(op.Bytes / int64(op.Elems))}
				c.colls = addRing(c.colls, k)
				if op.Kind == AllReduce {
					c.msgs += int64(2 * (g - 1))
				} else {
					c.msgs += int64(g - 1)
				}
			}
		case Send:
			c.msgs++
			c.sends = addSend(c.sends, sendUse{stage: p.RankAt(op.Peer).Stage, bytes: op.Bytes})
		}
		if op.Microbatch != 0 || op.Chunk != p.lastChunk(phase) {
			continue
		}
		switch {
		case op.Kind == AllReduce || op.Kind == AllGather:
			c.collectiveOps += p.TP * p.DP
		case op.Kind == Send && op.Payload == PayloadActivation:
			c.activationSends += p.TP * p.DP
		case op.Kind == Send && op.Payload == PayloadTokens:
			c.tokenSends += p.TP * p.DP
		}
	}
	return c
}

// linkSums are bytes by link class, in the order the classes first
// appear (a handful at most); a class added with 0 bytes is kept, as a map
// entry would be.
type linkSums []struct {
	class topology.LinkClass
	bytes int64
}

func (ls *linkSums) add(c topology.LinkClass, b int64) {
	for i := range *ls {
		if (*ls)[i].class == c {
			(*ls)[i].bytes += b
			return
		}
	}
	*ls = append(*ls, struct {
		class topology.LinkClass
		bytes int64
	}{c, b})
}

// ringKey is a ring collective's shape: the kind, the group size, the
// payload elements (all-gather: the output) and their size.
type ringKey struct {
	kind        Kind
	n           int
	elems, elem int
}

// ringUse is how often a stage's Program runs one ring collective shape,
// and the wire bytes its ring positions send in it (ringWireSums).
type ringUse struct {
	key   ringKey
	count int
	wire  []int64
}

func addRing(us []ringUse, k ringKey) []ringUse {
	for i := range us {
		if us[i].key == k {
			us[i].count++
			return us
		}
	}
	return append(us, ringUse{key: k, count: 1})
}

// ringWireSums is the wire bytes the positions of k's ring send their
// successors, as Counts computes them, summed from the first: element t is
// positions 0 … t−1's (n + 1 elements), so positions [t0, t1) send
// sums[t1] − sums[t0].
//
// An all-reduce position's wire bytes are commcount.RingAllReduceWire's,
// summed in closed form (TestRingWireSumsAreRingWire holds them to it): in
// its n−1 reduce-scatter steps position p sends every chunk but
// (p+1) mod n, in its n−1 all-gather steps every chunk but (p+2) mod n
// (commcount.RingReduceScatterChunk, RingAllGatherChunk), and the chunks
// hold count elements in all; integers, so the order of the sum does not
// matter.
func ringWireSums(k ringKey) []int64 {
	out := make([]int64, k.n+1)
	for pos := 0; pos < k.n; pos++ {
		var w int64
		switch {
		case k.kind == AllReduce && k.n > 1:
			rs := k.elems - commcount.ChunkLen(k.elems, k.n, (pos+1)%k.n)
			ag := k.elems - commcount.ChunkLen(k.elems, k.n, (pos+2)%k.n)
			w = int64(rs*k.elem) + int64(ag*k.elem)
		case k.kind == AllReduce:
		default:
			_, w = commcount.RingAllGatherWire(k.n, k.elems/k.n, k.elem)
		}
		out[pos+1] = out[pos] + w
	}
	return out
}

// sendUse is the bytes a stage's Program sends to one stage.
type sendUse struct {
	stage int
	bytes int64
}

func addSend(us []sendUse, u sendUse) []sendUse {
	for i := range us {
		if us[i].stage == u.stage {
			us[i].bytes += u.bytes
			return us
		}
	}
	return append(us, u)
}

// lastChunk is the chunk whose pass produces the next token.
func (p *Plan) lastChunk(phase Phase) int {
	if phase == Prefill {
		return p.PrefillChunks - 1
	}
	return 0
}
