package tcpcomm

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
)

// Group is a ring over a subset of ranks. Its traffic travels on its own
// channel (derived from its ranks and how many groups with those ranks were
// created before), apart from point-to-point messages and other groups.
type Group struct {
	c     *Comm
	ranks []int
	pos   int    // this rank's position in ranks
	ch    uint64 // the group's channel
}

var _ pexec.Group = (*Group)(nil)

// NewGroup creates a group over ranks (ascending, containing this rank).
// Every member calls it in the same order with the same ranks; no message
// is exchanged, so a member that disagrees shows up as a size mismatch in
// the first collective.
func (c *Comm) NewGroup(ctx context.Context, ranks []int) (pexec.Group, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	pos := -1
	for i, r := range ranks {
		if r < 0 || r >= c.size || (i > 0 && r <= ranks[i-1]) {
			return nil, fmt.Errorf("tcpcomm: group %v: ranks must be ascending and within a world of %d", ranks, c.size)
		}
		if r == c.rank {
			pos = i
		}
	}
	if pos < 0 {
		return nil, fmt.Errorf("tcpcomm: group %v does not contain rank %d", ranks, c.rank)
	}
	c.groupMu.Lock()
	defer c.groupMu.Unlock()
	base := fmt.Sprint(ranks)
	key := fmt.Sprintf("%s#%d", base, c.groupSeen[base])
	h := fnv.New64a()
	h.Write([]byte(key))
	ch := h.Sum64()
	if ch == chP2P || ch == chBarrier || ch == chBye {
		ch ^= 0x9e3779b97f4a7c15
	}
	// Every pair's channels are known to both ends (both are members), so a
	// collision that matters is always seen here.
	if other, ok := c.groupIDs[ch]; ok {
		return nil, fmt.Errorf("tcpcomm: groups %s and %s hash to the same channel", other, key)
	}
	c.groupSeen[base]++
	c.groupIDs[ch] = key
	return &Group{c: c, ranks: slices.Clone(ranks), pos: pos, ch: ch}, nil
}

// Ranks are the members' global ranks, ascending.
func (g *Group) Ranks() []int { return slices.Clone(g.ranks) }

func (g *Group) neighbours() (next, prev int) {
	n := len(g.ranks)
	return g.ranks[(g.pos+1)%n], g.ranks[(g.pos-1+n)%n]
}

// AllReduce sums buf over the members in place with the ring of
// commcount: n−1 reduce-scatter steps, then n−1 all-gather steps, each
// sending one chunk to the next member. Each chunk is summed in ring order
// starting at its owner, the same way every time, so results are
// deterministic, and identical on every member. Counted as one all_reduce
// call of buf.Bytes() and one message per step sent (RingAllReduceWire).
func (g *Group) AllReduce(ctx context.Context, buf pexec.Buffer) error {
	b, err := asF32(buf, "all-reduce")
	if err != nil {
		return err
	}
	if err := g.c.usable(ctx); err != nil {
		return err
	}
	c, n, p := g.c, len(g.ranks), g.pos
	c.counter.Call(commcount.AllReduce, b.Bytes())
	if n == 1 {
		return nil
	}
	next, prev := g.neighbours()
	count := len(b)
	chunk := func(i int) []float32 {
		s := commcount.ChunkStart(count, n, i)
		return b[s : s+commcount.ChunkLen(count, n, i)]
	}
	step := func(phase string, s, send, recv int, reduce bool) error {
		out := chunk(send)
		if np, pp := c.peers[next], c.peers[prev]; np.directTo() && pp.shm != nil {
			c.counter.Message(next, int64(4*len(out)))
			return c.exchangeShm(ctx, np, pp, g.ch, out, chunk(recv), reduce, func() string {
				return fmt.Sprintf("all-reduce %s step %d", phase, s)
			})
		}
		if err := c.post(next, g.ch, out); err != nil {
			return err
		}
		c.counter.Message(next, int64(4*len(out)))
		msg, err := c.take(ctx, prev, g.ch, "all-reduce")
		if err != nil {
			return err
		}
		in := chunk(recv)
		if err := checkLen(fmt.Sprintf("all-reduce %s step %d", phase, s), prev, msg, len(in)); err != nil {
			return err
		}
		if reduce {
			addInto(in, msg)
		} else {
			decodeInto(in, msg)
		}
		return nil
	}
	pp := (p - 1 + n) % n // the previous member's position
	for s := 0; s < n-1; s++ {
		if err := step("reduce-scatter", s, commcount.RingReduceScatterChunk(n, p, s), commcount.RingReduceScatterChunk(n, pp, s), true); err != nil {
			return err
		}
	}
	for s := 0; s < n-1; s++ {
		if err := step("all-gather", s, commcount.RingAllGatherChunk(n, p, s), commcount.RingAllGatherChunk(n, pp, s), false); err != nil {
			return err
		}
	}
	return nil
}

// AllGather concatenates every member's send, in rank order, into recv with
// a ring of n−1 steps: in step s a member forwards block (p−s) mod n. Counted
// as one all_gather call of recv.Bytes() and n−1 messages of send.Bytes().
func (g *Group) AllGather(ctx context.Context, send, recv pexec.Buffer) error {
	s, err := asF32(send, "all-gather send")
	if err != nil {
		return err
	}
	r, err := asF32(recv, "all-gather recv")
	if err != nil {
		return err
	}
	n, p := len(g.ranks), g.pos
	if len(r) != n*len(s) {
		return fmt.Errorf("tcpcomm: all-gather: recv has %d elements, want %d members × %d = %d", len(r), n, len(s), n*len(s))
	}
	if err := g.c.usable(ctx); err != nil {
		return err
	}
	c, count := g.c, len(s)
	c.counter.Call(commcount.AllGather, r.Bytes())
	copy(r[p*count:], s)
	if n == 1 {
		return nil
	}
	next, prev := g.neighbours()
	block := func(i int) []float32 { return r[i*count : (i+1)*count] }
	for st := 0; st < n-1; st++ {
		out := block((p - st + n) % n)
		if np, pp := c.peers[next], c.peers[prev]; np.directTo() && pp.shm != nil {
			c.counter.Message(next, int64(4*count))
			if err := c.exchangeShm(ctx, np, pp, g.ch, out, block((p-1-st+2*n)%n), false, func() string {
				return fmt.Sprintf("all-gather step %d", st)
			}); err != nil {
				return err
			}
			continue
		}
		if err := c.post(next, g.ch, out); err != nil {
			return err
		}
		c.counter.Message(next, int64(4*count))
		msg, err := c.take(ctx, prev, g.ch, "all-gather")
		if err != nil {
			return err
		}
		in := block((p - 1 - st + 2*n) % n)
		if err := checkLen(fmt.Sprintf("all-gather step %d", st), prev, msg, count); err != nil {
			return err
		}
		decodeInto(in, msg)
	}
	return nil
}
