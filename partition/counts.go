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
	CallsPerRank    []int64 `json:"calls_per_rank"`
	MessagesPerRank []int64 `json:"messages_per_rank"`
	// BytesByLink sums every rank's wire bytes by the class of link to the peer.
	BytesByLink map[topology.LinkClass]int64 `json:"bytes_by_link"`
}

// Comm summarizes the communication of a phase.
func (p *Plan) Comm(phase Phase) CommSummary {
	s := CommSummary{BytesByLink: map[topology.LinkClass]int64{}}
	var collectiveOps, activationSends, tokenSends int
	for r := range p.Ranks {
		prog := p.Program(r, phase)
		snap := p.Counts(prog)
		s.CallsPerRank = append(s.CallsPerRank, snap.TotalCalls())
		s.MessagesPerRank = append(s.MessagesPerRank, snap.Messages())
		for peer, pc := range snap.Peers {
			s.BytesByLink[p.System.Topology.Path(r, peer).Class] += pc.WireBytes
		}
		for _, op := range prog.Ops {
			if op.Microbatch != 0 || op.Chunk != p.lastChunk(phase) {
				continue
			}
			switch {
			case op.Kind == AllReduce || op.Kind == AllGather:
				collectiveOps++
			case op.Kind == Send && op.Payload == PayloadActivation:
				activationSends++
			case op.Kind == Send && op.Payload == PayloadTokens:
				tokenSends++
			}
		}
	}
	// Each logical collective and each boundary transfer appears once on
	// every one of the TP ranks that carries it, in every replica (each
	// replica passes its own micro-batch 0).
	n := p.TP * p.DP
	s.CollectiveCallsPerMicrobatch = collectiveOps / n
	s.P2PSendsPerMicrobatch = activationSends / n
	s.TokenSendsPerMicrobatch = tokenSends / n
	return s
}

// lastChunk is the chunk whose pass produces the next token.
func (p *Plan) lastChunk(phase Phase) int {
	if phase == Prefill {
		return p.PrefillChunks - 1
	}
	return 0
}
