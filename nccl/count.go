package nccl

import "github.com/partbench/partbench/commcount"

// tally records one rank's calls on one communicator under the commcount
// definitions, with point-to-point messages as the ring-equivalent
// pattern (see Comm). pos is this rank's position; ranks[p] is the global
// rank at position p, the peer id the counter records.
type tally struct {
	ctr   *commcount.Counter
	ranks []int
	pos   int
}

func (t tally) n() int { return len(t.ranks) }

// successor is the global rank of the next position on the ring.
func (t tally) successor() int { return t.ranks[(t.pos+1)%t.n()] }

func (t tally) messages(msgs, wire int64) {
	if msgs > 0 {
		t.ctr.Messages(t.successor(), msgs, wire)
	}
}

func (t tally) allReduce(count, elem int) {
	t.ctr.Call(commcount.AllReduce, int64(count)*int64(elem))
	t.messages(commcount.RingAllReduceWire(t.n(), t.pos, count, elem))
}

// allGather: payload is the gathered output, n × sendcount elements.
func (t tally) allGather(sendcount, elem int) {
	t.ctr.Call(commcount.AllGather, int64(t.n())*int64(sendcount)*int64(elem))
	t.messages(commcount.RingAllGatherWire(t.n(), sendcount, elem))
}

// reduceScatter: payload is the input, n × recvcount elements; a ring
// reduce-scatter sends n−1 shards of recvcount, as an all-gather does.
func (t tally) reduceScatter(recvcount, elem int) {
	t.ctr.Call(commcount.ReduceScatter, int64(t.n())*int64(recvcount)*int64(elem))
	t.messages(commcount.RingAllGatherWire(t.n(), recvcount, elem))
}

// broadcast: a chain root → root+1 → … → root−1; every position but the
// root's predecessor sends the buffer once to its successor.
func (t tally) broadcast(count, elem, root int) {
	bytes := int64(count) * int64(elem)
	t.ctr.Call(commcount.Broadcast, bytes)
	if t.n() > 1 && (t.pos+1)%t.n() != root {
		t.ctr.Message(t.successor(), bytes)
	}
}

func (t tally) send(count, elem, peer int) {
	bytes := int64(count) * int64(elem)
	t.ctr.Call(commcount.Send, bytes)
	t.ctr.Message(t.ranks[peer], bytes)
}

func (t tally) recv(count, elem int) {
	t.ctr.Call(commcount.Recv, int64(count)*int64(elem))
}
