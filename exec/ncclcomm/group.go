package ncclcomm

import (
	"context"
	"fmt"
	"slices"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/nccl"
)

// Group is a communicator over one group of the plan (a tensor-parallel
// group), created from the unique id rank 0 made for it. Its calls are
// queued on the rank's stream and counted in the Comm's counter, with the
// members' global ranks as peers.
type Group struct {
	c     *Comm
	key   string
	ranks []int
	nc    *nccl.Comm
}

var _ pexec.Group = (*Group)(nil)

// NewGroup creates the communicator of the group over ranks (ascending,
// containing this rank), which must be a group of the plan New was given:
// its id was shared then. Every member calls it, in the same order (NCCL
// waits for all of them). Asking again for the same ranks returns the same
// Group: an NCCL unique id makes one communicator.
func (c *Comm) NewGroup(ctx context.Context, ranks []int) (pexec.Group, error) {
	pos := -1
	for i, r := range ranks {
		if r < 0 || r >= c.size || (i > 0 && r <= ranks[i-1]) {
			return nil, fmt.Errorf("ncclcomm: rank %d: group %v: ranks must be ascending and within a world of %d", c.rank, ranks, c.size)
		}
		if r == c.rank {
			pos = i
		}
	}
	if pos < 0 {
		return nil, fmt.Errorf("ncclcomm: rank %d: group %v does not contain this rank", c.rank, ranks)
	}
	key := pexec.GroupKey(ranks)
	c.mu.Lock()
	g := c.groups[key]
	c.mu.Unlock()
	if g != nil {
		return g, nil
	}
	id, ok := c.ids.Groups[key]
	if !ok {
		return nil, fmt.Errorf("ncclcomm: rank %d: group %s is not a group of the plan (no unique id was made for it)", c.rank, key)
	}
	g = &Group{c: c, key: key, ranks: slices.Clone(ranks)}
	err := c.call(ctx, "group "+key, func() error {
		if err := c.endGroup(ctx); err != nil {
			return err
		}
		var err error
		g.nc, err = c.newComm(ctx, len(ranks), uniqueID(id), pos, g.ranks, c.counter)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.groups[key] = g
	c.mu.Unlock()
	return g, nil
}

// Ranks are the members' global ranks, ascending.
func (g *Group) Ranks() []int { return slices.Clone(g.ranks) }

// AllReduce sums buf over the members in place (ncclAllReduce, ncclSum) on
// the rank's stream. Counted as one all_reduce call of buf.Bytes() and the
// ring-equivalent messages (nccl.Comm).
func (g *Group) AllReduce(ctx context.Context, buf pexec.Buffer) error {
	what := "all-reduce in group " + g.key
	b, dt, err := g.c.device(buf, what)
	if err != nil {
		return err
	}
	g.c.clean = false
	return g.c.call(ctx, what, func() error {
		if err := g.c.endGroup(ctx); err != nil {
			return err
		}
		p := uintptr(b.Ptr())
		if err := g.nc.AllReduce(p, p, b.Len(), dt, nccl.Sum, g.c.stream()); err != nil {
			return err
		}
		return g.c.settle(ctx, g.nc)
	})
}

// AllGather concatenates every member's send, in rank order, into recv
// (ncclAllGather) on the rank's stream; both of one element type and
// recv.Len() == members × send.Len(). Counted as one all_gather call of
// recv.Bytes() and the ring-equivalent messages.
func (g *Group) AllGather(ctx context.Context, send, recv pexec.Buffer) error {
	what := "all-gather in group " + g.key
	s, dt, err := g.c.device(send, what)
	if err != nil {
		return err
	}
	r, rdt, err := g.c.device(recv, what)
	if err != nil {
		return err
	}
	if rdt != dt {
		return fmt.Errorf("ncclcomm: rank %d: %s: send is %v, recv %v", g.c.rank, what, dt, rdt)
	}
	if n := len(g.ranks); r.Len() != n*s.Len() {
		return fmt.Errorf("ncclcomm: rank %d: %s: recv has %d elements, want %d members × %d = %d", g.c.rank, what, r.Len(), n, s.Len(), n*s.Len())
	}
	g.c.clean = false
	return g.c.call(ctx, what, func() error {
		if err := g.c.endGroup(ctx); err != nil {
			return err
		}
		if err := g.nc.AllGather(uintptr(s.Ptr()), uintptr(r.Ptr()), s.Len(), dt, g.c.stream()); err != nil {
			return err
		}
		return g.c.settle(ctx, g.nc)
	})
}
