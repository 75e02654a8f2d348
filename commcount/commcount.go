// Package commcount holds the one definition of "communication event" that
// partbench uses everywhere: the counts derived from a partition.Program for
// the estimate, and the counts recorded at the communication layer (the TCP
// communicator, the NCCL binding) during a run; and the vocabulary of
// collective algorithms (Algorithm, ParseAlgorithm) the model reports and
// calibration files record. It must not know how a message is carried.
package commcount

import (
	"fmt"
	"sort"
	"sync"
)

// Op names a communication call as NCCL names it.
type Op string

const (
	AllReduce     Op = "all_reduce"
	AllGather     Op = "all_gather"
	ReduceScatter Op = "reduce_scatter"
	Broadcast     Op = "broadcast"
	Reduce        Op = "reduce"
	Send          Op = "send"
	Recv          Op = "recv"
)

// Collective reports whether op is a collective (as opposed to point-to-point).
func (op Op) Collective() bool { return op != Send && op != Recv }

// Counter records calls and payload bytes per op, and point-to-point messages
// and wire bytes per peer. It is safe for concurrent use.
//
// Definitions (the same on both sides of a comparison):
//   - a call is one library call on one rank (one ncclAllReduce, one ncclSend);
//   - the payload of a call is the user buffer size in bytes (count × element size),
//     for all_gather the size of the gathered output, for send/recv the message;
//   - a message is one point-to-point transfer between two ranks on the wire; a
//     ring all-reduce over n ranks sends 2(n−1) messages per rank;
//   - wire bytes are the bytes a rank sends to a peer (a ring all-reduce of S
//     bytes over n ranks sends 2(n−1)/n·S in total).
type Counter struct {
	mu    sync.Mutex
	calls map[Op]int64
	bytes map[Op]int64
	peers map[int]*PeerCount
}

// PeerCount is what one rank sent to one peer.
type PeerCount struct {
	Messages  int64 `json:"messages"`
	WireBytes int64 `json:"wire_bytes"`
}

// Snapshot is an immutable copy of a Counter.
type Snapshot struct {
	Calls map[Op]int64      `json:"calls"`
	Bytes map[Op]int64      `json:"payload_bytes"`
	Peers map[int]PeerCount `json:"peers"`
}

// New returns an empty Counter.
func New() *Counter {
	return &Counter{calls: map[Op]int64{}, bytes: map[Op]int64{}, peers: map[int]*PeerCount{}}
}

// Call records one call of op with the given payload bytes.
func (c *Counter) Call(op Op, payloadBytes int64) {
	c.mu.Lock()
	c.calls[op]++
	c.bytes[op] += payloadBytes
	c.mu.Unlock()
}

// Message records one point-to-point message of wireBytes sent to peer.
func (c *Counter) Message(peer int, wireBytes int64) { c.Messages(peer, 1, wireBytes) }

// Messages records n point-to-point messages carrying wireBytes in total to peer.
func (c *Counter) Messages(peer int, n, wireBytes int64) {
	c.mu.Lock()
	p := c.peers[peer]
	if p == nil {
		p = &PeerCount{}
		c.peers[peer] = p
	}
	p.Messages += n
	p.WireBytes += wireBytes
	c.mu.Unlock()
}

// Snapshot copies the current counts.
func (c *Counter) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{Calls: map[Op]int64{}, Bytes: map[Op]int64{}, Peers: map[int]PeerCount{}}
	for k, v := range c.calls {
		s.Calls[k] = v
	}
	for k, v := range c.bytes {
		s.Bytes[k] = v
	}
	for k, v := range c.peers {
		s.Peers[k] = *v
	}
	return s
}

// Reset clears all counts (used between warm-up and measurement).
func (c *Counter) Reset() {
	c.mu.Lock()
	c.calls = map[Op]int64{}
	c.bytes = map[Op]int64{}
	c.peers = map[int]*PeerCount{}
	c.mu.Unlock()
}

// TotalCalls is the number of calls of every op.
func (s Snapshot) TotalCalls() int64 {
	var n int64
	for _, v := range s.Calls {
		n += v
	}
	return n
}

// Messages is the number of point-to-point messages to every peer.
func (s Snapshot) Messages() int64 {
	var n int64
	for _, p := range s.Peers {
		n += p.Messages
	}
	return n
}

// Sub returns s − base, for counts taken over an interval.
func (s Snapshot) Sub(base Snapshot) Snapshot {
	out := Snapshot{Calls: map[Op]int64{}, Bytes: map[Op]int64{}, Peers: map[int]PeerCount{}}
	for k, v := range s.Calls {
		if d := v - base.Calls[k]; d != 0 {
			out.Calls[k] = d
		}
	}
	for k, v := range s.Bytes {
		if d := v - base.Bytes[k]; d != 0 {
			out.Bytes[k] = d
		}
	}
	for k, v := range s.Peers {
		b := base.Peers[k]
		if v.Messages != b.Messages || v.WireBytes != b.WireBytes {
			out.Peers[k] = PeerCount{Messages: v.Messages - b.Messages, WireBytes: v.WireBytes - b.WireBytes}
		}
	}
	return out
}

// Add returns s + o.
func (s Snapshot) Add(o Snapshot) Snapshot {
	out := Snapshot{Calls: map[Op]int64{}, Bytes: map[Op]int64{}, Peers: map[int]PeerCount{}}
	for _, x := range []Snapshot{s, o} {
		for k, v := range x.Calls {
			out.Calls[k] += v
		}
		for k, v := range x.Bytes {
			out.Bytes[k] += v
		}
		for k, v := range x.Peers {
			p := out.Peers[k]
			out.Peers[k] = PeerCount{Messages: p.Messages + v.Messages, WireBytes: p.WireBytes + v.WireBytes}
		}
	}
	return out
}

// Times returns s with every count multiplied by k.
func (s Snapshot) Times(k int) Snapshot {
	out := Snapshot{Calls: map[Op]int64{}, Bytes: map[Op]int64{}, Peers: map[int]PeerCount{}}
	for op, v := range s.Calls {
		out.Calls[op] = v * int64(k)
	}
	for op, v := range s.Bytes {
		out.Bytes[op] = v * int64(k)
	}
	for p, v := range s.Peers {
		out.Peers[p] = PeerCount{Messages: v.Messages * int64(k), WireBytes: v.WireBytes * int64(k)}
	}
	return out
}

// Diff lists every count that differs between want and got, one line each,
// in a stable order. An empty result means the two agree exactly.
func Diff(want, got Snapshot) []string {
	var out []string
	ops := map[Op]bool{}
	for k := range want.Calls {
		ops[k] = true
	}
	for k := range got.Calls {
		ops[k] = true
	}
	for k := range want.Bytes {
		ops[k] = true
	}
	for k := range got.Bytes {
		ops[k] = true
	}
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for _, n := range names {
		k := Op(n)
		if want.Calls[k] != got.Calls[k] {
			out = append(out, fmt.Sprintf("%s calls: want %d, got %d", k, want.Calls[k], got.Calls[k]))
		}
		if want.Bytes[k] != got.Bytes[k] {
			out = append(out, fmt.Sprintf("%s payload bytes: want %d, got %d", k, want.Bytes[k], got.Bytes[k]))
		}
	}
	peers := map[int]bool{}
	for k := range want.Peers {
		peers[k] = true
	}
	for k := range got.Peers {
		peers[k] = true
	}
	ids := make([]int, 0, len(peers))
	for k := range peers {
		ids = append(ids, k)
	}
	sort.Ints(ids)
	for _, p := range ids {
		if want.Peers[p] != got.Peers[p] {
			out = append(out, fmt.Sprintf("peer %d: want %d messages / %d bytes, got %d / %d",
				p, want.Peers[p].Messages, want.Peers[p].WireBytes, got.Peers[p].Messages, got.Peers[p].WireBytes))
		}
	}
	return out
}
