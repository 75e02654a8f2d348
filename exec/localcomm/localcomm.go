package localcomm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
)

// errClosed is returned by calls on, or pending on, a closed communicator.
var errClosed = errors.New("localcomm: communicator closed")

// hub is the state the ranks of one New share.
type hub struct {
	size  int
	mu    sync.Mutex
	boxes map[[2]int]*mailbox // point-to-point queues by (from, to)
	rings map[string]*ring    // group instances by key and creation index

	bmu    sync.Mutex
	bcount int
	bgen   chan struct{}
}

// New returns one communicator per rank of a size-rank world.
func New(size int) []*Comm {
	h := &hub{size: size, boxes: map[[2]int]*mailbox{}, rings: map[string]*ring{}, bgen: make(chan struct{})}
	out := make([]*Comm, size)
	for r := range out {
		out[r] = &Comm{h: h, rank: r, counter: commcount.New(), closed: make(chan struct{}), made: map[string]int{}}
	}
	return out
}

// Comms returns New(size) as exec.Comm values.
func Comms(size int) []pexec.Comm {
	out := make([]pexec.Comm, size)
	for i, c := range New(size) {
		out[i] = c
	}
	return out
}

// Comm is one rank's communicator.
type Comm struct {
	h         *hub
	rank      int
	counter   *commcount.Counter
	closed    chan struct{}
	closeOnce sync.Once
	made      map[string]int // groups created per key, to tell repeated groups apart
}

var _ pexec.Comm = (*Comm)(nil)

func (c *Comm) Rank() int                       { return c.rank }
func (c *Comm) Size() int                       { return c.h.size }
func (c *Comm) Counter() *commcount.Counter     { return c.counter }
func (c *Comm) Flush(ctx context.Context) error { return c.alive(ctx) } // sends are copied when posted

// Close fails this rank's pending and later calls.
func (c *Comm) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *Comm) alive(ctx context.Context) error {
	select {
	case <-c.closed:
		return errClosed
	default:
	}
	return ctx.Err()
}

func f32(b pexec.Buffer) (pexec.F32, error) {
	f, ok := b.(pexec.F32)
	if !ok {
		return nil, fmt.Errorf("localcomm: buffer is %T, want exec.F32", b)
	}
	return f, nil
}

func (c *Comm) checkPeer(peer int) error {
	if peer < 0 || peer >= c.h.size {
		return fmt.Errorf("localcomm: peer %d outside [0, %d)", peer, c.h.size)
	}
	return nil
}

// mailbox is an unbounded FIFO of messages from one rank to another.
type mailbox struct {
	mu    sync.Mutex
	q     [][]float32
	ready chan struct{} // signalled (capacity 1) when a message is queued
}

func (h *hub) box(from, to int) *mailbox {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := [2]int{from, to}
	b := h.boxes[k]
	if b == nil {
		b = &mailbox{ready: make(chan struct{}, 1)}
		h.boxes[k] = b
	}
	return b
}

// Send copies buf into peer's queue and returns at once.
func (c *Comm) Send(ctx context.Context, buf pexec.Buffer, peer int) error {
	b, err := f32(buf)
	if err != nil {
		return err
	}
	if err := c.checkPeer(peer); err != nil {
		return err
	}
	if err := c.alive(ctx); err != nil {
		return err
	}
	c.counter.Call(commcount.Send, b.Bytes())
	c.counter.Message(peer, b.Bytes())
	box := c.h.box(c.rank, peer)
	box.mu.Lock()
	box.q = append(box.q, slices.Clone([]float32(b)))
	box.mu.Unlock()
	select {
	case box.ready <- struct{}{}:
	default:
	}
	return nil
}

// Recv fills buf with the next message from peer.
func (c *Comm) Recv(ctx context.Context, buf pexec.Buffer, peer int) error {
	b, err := f32(buf)
	if err != nil {
		return err
	}
	if err := c.checkPeer(peer); err != nil {
		return err
	}
	c.counter.Call(commcount.Recv, b.Bytes())
	box := c.h.box(peer, c.rank)
	for {
		box.mu.Lock()
		if len(box.q) > 0 {
			m := box.q[0]
			box.q = box.q[1:]
			box.mu.Unlock()
			if len(m) != len(b) {
				return fmt.Errorf("localcomm: recv from %d: message has %d elements, buffer %d", peer, len(m), len(b))
			}
			copy(b, m)
			return nil
		}
		box.mu.Unlock()
		select {
		case <-box.ready:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return errClosed
		}
	}
}

// Barrier returns when every rank has entered it.
func (c *Comm) Barrier(ctx context.Context) error {
	if err := c.alive(ctx); err != nil {
		return err
	}
	h := c.h
	h.bmu.Lock()
	gen := h.bgen
	h.bcount++
	if h.bcount == h.size {
		close(gen)
		h.bgen, h.bcount = make(chan struct{}), 0
	}
	h.bmu.Unlock()
	select {
	case <-gen:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return errClosed
	}
}

// ring is one group instance: links[p] carries messages from position p to
// position p+1.
type ring struct {
	ranks []int
	links []chan []float32
}

// NewGroup joins the group of ranks (ascending, containing Rank()). The
// members' k-th NewGroup calls with the same ranks meet in one instance.
func (c *Comm) NewGroup(ctx context.Context, ranks []int) (pexec.Group, error) {
	if err := c.alive(ctx); err != nil {
		return nil, err
	}
	pos := -1
	for i, r := range ranks {
		if r < 0 || r >= c.h.size || i > 0 && r <= ranks[i-1] {
			return nil, fmt.Errorf("localcomm: group %v: ranks must be ascending and in [0, %d)", ranks, c.h.size)
		}
		if r == c.rank {
			pos = i
		}
	}
	if pos < 0 {
		return nil, fmt.Errorf("localcomm: group %v does not contain rank %d", ranks, c.rank)
	}
	key := pexec.GroupKey(ranks)
	id := fmt.Sprintf("%s#%d", key, c.made[key])
	c.made[key]++
	c.h.mu.Lock()
	rg := c.h.rings[id]
	if rg == nil {
		n := len(ranks)
		rg = &ring{ranks: slices.Clone(ranks), links: make([]chan []float32, n)}
		for i := range rg.links {
			// Within one collective a member runs at most n−1 steps ahead of
			// its successor; 2n keeps every send non-blocking across calls.
			rg.links[i] = make(chan []float32, 2*n)
		}
		c.h.rings[id] = rg
	}
	c.h.mu.Unlock()
	return &Group{c: c, r: rg, pos: pos}, nil
}

// Group is one rank's membership of a group.
type Group struct {
	c   *Comm
	r   *ring
	pos int
}

var _ pexec.Group = (*Group)(nil)

// Ranks are the members' global ranks, ascending.
func (g *Group) Ranks() []int { return slices.Clone(g.r.ranks) }

func (g *Group) next() int { return g.r.ranks[(g.pos+1)%len(g.r.ranks)] }

func (g *Group) send(ctx context.Context, m []float32) error {
	g.c.counter.Message(g.next(), int64(4*len(m)))
	select {
	case g.r.links[g.pos] <- slices.Clone(m):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-g.c.closed:
		return errClosed
	}
}

func (g *Group) recv(ctx context.Context, want int) ([]float32, error) {
	n := len(g.r.ranks)
	select {
	case m := <-g.r.links[(g.pos+n-1)%n]:
		if len(m) != want {
			return nil, fmt.Errorf("localcomm: group %s: ring message has %d elements, want %d (members called different collectives)",
				pexec.GroupKey(g.r.ranks), len(m), want)
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.c.closed:
		return nil, errClosed
	}
}

// AllReduce sums buf over the members in place with commcount's ring: in
// reduce-scatter step s position p sends chunk RingReduceScatterChunk(n, p, s)
// and adds the chunk it receives to its own (local + received, in float32);
// in all-gather step s it sends chunk RingAllGatherChunk(n, p, s) and
// overwrites the chunk it receives.
func (g *Group) AllReduce(ctx context.Context, buf pexec.Buffer) error {
	b, err := f32(buf)
	if err != nil {
		return err
	}
	if err := g.c.alive(ctx); err != nil {
		return err
	}
	g.c.counter.Call(commcount.AllReduce, b.Bytes())
	n, p, count := len(g.r.ranks), g.pos, len(b)
	if n == 1 {
		return nil
	}
	chunk := func(i int) []float32 {
		s := commcount.ChunkStart(count, n, i)
		return b[s : s+commcount.ChunkLen(count, n, i)]
	}
	prev := (p + n - 1) % n
	for s := 0; s < n-1; s++ {
		if err := g.send(ctx, chunk(commcount.RingReduceScatterChunk(n, p, s))); err != nil {
			return err
		}
		dst := chunk(commcount.RingReduceScatterChunk(n, prev, s))
		m, err := g.recv(ctx, len(dst))
		if err != nil {
			return err
		}
		for i, v := range m {
			dst[i] += v
		}
	}
	for s := 0; s < n-1; s++ {
		if err := g.send(ctx, chunk(commcount.RingAllGatherChunk(n, p, s))); err != nil {
			return err
		}
		dst := chunk(commcount.RingAllGatherChunk(n, prev, s))
		m, err := g.recv(ctx, len(dst))
		if err != nil {
			return err
		}
		copy(dst, m)
	}
	return nil
}

// AllGather concatenates the members' send buffers in rank order into recv,
// passing blocks around the ring: in step s position p sends block (p−s) mod n.
func (g *Group) AllGather(ctx context.Context, send, recv pexec.Buffer) error {
	sb, err := f32(send)
	if err != nil {
		return err
	}
	rb, err := f32(recv)
	if err != nil {
		return err
	}
	n, p, count := len(g.r.ranks), g.pos, len(sb)
	if len(rb) != n*count {
		return fmt.Errorf("localcomm: all-gather into %d elements, want %d members × %d", len(rb), n, count)
	}
	if err := g.c.alive(ctx); err != nil {
		return err
	}
	g.c.counter.Call(commcount.AllGather, rb.Bytes())
	block := func(i int) []float32 { i = (i%n + n) % n; return rb[i*count : (i+1)*count] }
	copy(block(p), sb)
	for s := 0; s < n-1; s++ {
		if err := g.send(ctx, block(p-s)); err != nil {
			return err
		}
		m, err := g.recv(ctx, count)
		if err != nil {
			return err
		}
		copy(block(p-1-s), m)
	}
	return nil
}
