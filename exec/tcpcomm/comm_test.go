package tcpcomm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/rendezvous"
)

// world connects n ranks in this process: a rendezvous session each (over
// loopback), then a Comm each.
func world(t testing.TB, n int) []*Comm {
	t.Helper()
	shmDir := t.TempDir()
	return worldWith(t, n, func(int) Options {
		return Options{ListenHost: "127.0.0.1", Transport: testTransport, ShmDir: shmDir}
	})
}

// worldWith is world with each rank's Options.
func worldWith(t testing.TB, n int, opts func(rank int) Options) []*Comm {
	t.Helper()
	cs, errs := worldErrs(t, n, opts)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return cs
}

// worldErrs is worldWith returning each rank's error.
func worldErrs(t testing.TB, n int, opts func(rank int) Options) ([]*Comm, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ss := make([]*rendezvous.Session, n)
	cs := make([]*Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := rendezvous.Options{Addr: ln.Addr().String(), Rank: r, Size: n, JoinTimeout: 5 * time.Second, JobID: testJobID}
			if r == 0 {
				o.Listener = ln
			}
			if ss[r], errs[r] = rendezvous.Join(context.Background(), o); errs[r] != nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cs[r], errs[r] = NewWith(ctx, ss[r], r, n, opts(r))
		}()
	}
	wg.Wait()
	if n == 1 {
		ln.Close()
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for r := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if cs[r] != nil {
					cs[r].Close()
				}
				if ss[r] != nil {
					ss[r].Close()
				}
			}()
		}
		wg.Wait()
	})
	return cs, errs
}

// run calls f on every rank concurrently; a rank that does not return within
// 10 s fails the test instead of hanging it.
func run(t *testing.T, cs []*Comm, f func(r int, c *Comm) error) []error {
	t.Helper()
	errs := make([]error, len(cs))
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r, c) }()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ranks did not finish within 10s")
	}
	return errs
}

func mustAll(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

func TestAllReduceRing(t *testing.T) {
	counts := []int{0, 1, 5, 7, 13, 1000, 4099} // uneven against every n
	for _, n := range []int{1, 2, 3, 4, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cs := world(t, n)
			mustAll(t, run(t, cs, func(r int, c *Comm) error {
				all := make([]int, n)
				for i := range all {
					all[i] = i
				}
				g, err := c.NewGroup(context.Background(), all)
				if err != nil {
					return err
				}
				next := (r + 1) % n
				for _, count := range counts {
					// integer values: every summation order gives the exact sum
					val := func(rank, i int) float32 { return float32((rank+1)*(i%17) - i%5) }
					b := make(pexec.F32, count)
					for i := range b {
						b[i] = val(r, i)
					}
					base := c.Counter().Snapshot()
					if err := g.AllReduce(context.Background(), b); err != nil {
						return err
					}
					for i := range b {
						var want float32
						for q := 0; q < n; q++ {
							want += val(q, i)
						}
						if b[i] != want {
							return fmt.Errorf("count %d: element %d = %v, want %v", count, i, b[i], want)
						}
					}
					// counts: one call of the payload, the ring's messages to the successor
					msgs, wire := commcount.RingAllReduceWire(n, r, count, 4)
					want := commcount.Snapshot{
						Calls: map[commcount.Op]int64{commcount.AllReduce: 1},
						Bytes: map[commcount.Op]int64{commcount.AllReduce: int64(4 * count)},
						Peers: map[int]commcount.PeerCount{},
					}
					if n > 1 {
						want.Peers[next] = commcount.PeerCount{Messages: msgs, WireBytes: wire}
					}
					if d := commcount.Diff(want, c.Counter().Snapshot().Sub(base)); len(d) > 0 {
						return fmt.Errorf("count %d: counters differ from commcount: %v", count, d)
					}
				}
				return nil
			}))
		})
	}
}

func TestAllReduceDeterministic(t *testing.T) {
	// Non-integer values: the sum depends on the order of additions, which
	// the ring fixes, so two runs and all members agree bit for bit.
	const n, count = 4, 1003
	cs := world(t, n)
	results := make([][2]pexec.F32, n)
	mustAll(t, run(t, cs, func(r int, c *Comm) error {
		g, err := c.NewGroup(context.Background(), []int{0, 1, 2, 3})
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewSource(int64(r)))
		in := make(pexec.F32, count)
		for i := range in {
			in[i] = rng.Float32()*2 - 1
		}
		for k := 0; k < 2; k++ {
			b := append(pexec.F32(nil), in...)
			if err := g.AllReduce(context.Background(), b); err != nil {
				return err
			}
			results[r][k] = b
		}
		return nil
	}))
	for r := 0; r < n; r++ {
		for k := 0; k < 2; k++ {
			for i := range results[0][0] {
				if math.Float32bits(results[r][k][i]) != math.Float32bits(results[0][0][i]) {
					t.Fatalf("rank %d run %d element %d: %v vs %v", r, k, i, results[r][k][i], results[0][0][i])
				}
			}
		}
	}
}

func TestAllGather(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cs := world(t, n)
			mustAll(t, run(t, cs, func(r int, c *Comm) error {
				all := make([]int, n)
				for i := range all {
					all[i] = i
				}
				g, err := c.NewGroup(context.Background(), all)
				if err != nil {
					return err
				}
				for _, count := range []int{0, 1, 7} {
					send := make(pexec.F32, count)
					for i := range send {
						send[i] = float32(100*r + i)
					}
					recv := make(pexec.F32, n*count)
					base := c.Counter().Snapshot()
					if err := g.AllGather(context.Background(), send, recv); err != nil {
						return err
					}
					for q := 0; q < n; q++ {
						for i := 0; i < count; i++ {
							if recv[q*count+i] != float32(100*q+i) {
								return fmt.Errorf("count %d: recv[%d] = %v", count, q*count+i, recv[q*count+i])
							}
						}
					}
					msgs, wire := commcount.RingAllGatherWire(n, count, 4)
					want := commcount.Snapshot{
						Calls: map[commcount.Op]int64{commcount.AllGather: 1},
						Bytes: map[commcount.Op]int64{commcount.AllGather: int64(4 * n * count)},
						Peers: map[int]commcount.PeerCount{},
					}
					if n > 1 {
						want.Peers[(r+1)%n] = commcount.PeerCount{Messages: msgs, WireBytes: wire}
					}
					if d := commcount.Diff(want, c.Counter().Snapshot().Sub(base)); len(d) > 0 {
						return fmt.Errorf("count %d: %v", count, d)
					}
				}
				if err := g.AllGather(context.Background(), make(pexec.F32, 2), make(pexec.F32, 2*n+1)); err == nil ||
					!strings.Contains(err.Error(), fmt.Sprintf("recv has %d elements, want %d members × 2", 2*n+1, n)) {
					return fmt.Errorf("wrong recv size: %v", err)
				}
				return nil
			}))
		})
	}
}

func TestP2PFIFOAndCounts(t *testing.T) {
	const msgs = 200
	cs := world(t, 2)
	mustAll(t, run(t, cs, func(r int, c *Comm) error {
		ctx := context.Background()
		if r == 0 {
			for i := 0; i < msgs; i++ {
				b := make(pexec.F32, i%7)
				for j := range b {
					b[j] = float32(i)
				}
				if err := c.Send(ctx, b, 1); err != nil {
					return err
				}
				for j := range b { // the buffer may be reused at once
					b[j] = -1
				}
			}
			if err := c.Flush(ctx); err != nil {
				return err
			}
			// 200 sends of (i mod 7) elements: 28 full cycles of 0..6 (21 elements
			// each) plus i = 196..199 (0+1+2+3): 28·21+6 = 594 elements = 2376 B.
			s := c.Counter().Snapshot()
			if s.Calls[commcount.Send] != msgs || s.Bytes[commcount.Send] != 2376 ||
				s.Peers[1] != (commcount.PeerCount{Messages: msgs, WireBytes: 2376}) {
				return fmt.Errorf("sender counts %+v", s)
			}
			return nil
		}
		for i := 0; i < msgs; i++ {
			b := make(pexec.F32, i%7)
			if err := c.Recv(ctx, b, 0); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			for _, v := range b {
				if v != float32(i) {
					return fmt.Errorf("message %d holds %v: out of order", i, v)
				}
			}
		}
		s := c.Counter().Snapshot()
		if s.Calls[commcount.Recv] != msgs || s.Bytes[commcount.Recv] != 2376 || s.Messages() != 0 {
			return fmt.Errorf("receiver counts %+v (recv sends no messages)", s)
		}
		return nil
	}))
}

func TestGroupAndP2PTrafficApart(t *testing.T) {
	// Between the same pair: p2p messages, two groups over the same ranks and
	// a wider group, interleaved. Each call must get its own traffic.
	cs := world(t, 4)
	mustAll(t, run(t, cs, func(r int, c *Comm) error {
		ctx := context.Background()
		pair := []int{r &^ 1, r | 1}
		g1, err := c.NewGroup(ctx, pair)
		if err != nil {
			return err
		}
		g2, err := c.NewGroup(ctx, pair) // same ranks: a separate group
		if err != nil {
			return err
		}
		gAll, err := c.NewGroup(ctx, []int{0, 1, 2, 3})
		if err != nil {
			return err
		}
		other := r ^ 1
		for i := 0; i < 3; i++ {
			if err := c.Send(ctx, pexec.F32{float32(1000 + i)}, other); err != nil {
				return err
			}
		}
		a := pexec.F32{float32(r), 1}
		if err := g1.AllReduce(ctx, a); err != nil {
			return err
		}
		b := pexec.F32{10, float32(r), 3}
		if err := g2.AllReduce(ctx, b); err != nil {
			return err
		}
		w := pexec.F32{float32(r)}
		if err := gAll.AllReduce(ctx, w); err != nil {
			return err
		}
		sum := float32(pair[0] + pair[1])
		if a[0] != sum || a[1] != 2 || b[0] != 20 || b[1] != sum || b[2] != 6 || w[0] != 6 {
			return fmt.Errorf("collectives got %v %v %v", a, b, w)
		}
		for i := 0; i < 3; i++ {
			m := make(pexec.F32, 1)
			if err := c.Recv(ctx, m, other); err != nil {
				return err
			}
			if m[0] != float32(1000+i) {
				return fmt.Errorf("p2p message %d holds %v", i, m[0])
			}
		}
		// a rank outside the group cannot join it
		if _, err := c.NewGroup(ctx, []int{other}); err == nil || !strings.Contains(err.Error(), "does not contain rank") {
			return fmt.Errorf("foreign group: %v", err)
		}
		return c.Barrier(ctx)
	}))
}

type otherBuf struct{}

func (otherBuf) Len() int     { return 1 }
func (otherBuf) Bytes() int64 { return 2 }

func TestErrorsNameSizesTypesAndPeers(t *testing.T) {
	cs := world(t, 2)
	ctx := context.Background()
	if err := cs[0].Send(ctx, otherBuf{}, 1); err == nil || !strings.Contains(err.Error(), "unsupported buffer type tcpcomm.otherBuf (want exec.F32)") {
		t.Fatalf("buffer type: %v", err)
	}
	if err := cs[0].Send(ctx, pexec.F32{1, 2, 3}, 1); err != nil {
		t.Fatal(err)
	}
	err := cs[1].Recv(ctx, make(pexec.F32, 5), 0)
	if err == nil || !strings.Contains(err.Error(), "recv from rank 0: message has 3 elements (12 B), buffer has 5 elements (20 B)") {
		t.Fatalf("size mismatch: %v", err)
	}
	if err := cs[0].Send(ctx, pexec.F32{1}, 2); err == nil || !strings.Contains(err.Error(), "rank 2 is outside a world of 2") {
		t.Fatalf("bad peer: %v", err)
	}
	// cancellation: a Recv with nothing coming returns promptly, naming the peer
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = cs[1].Recv(cctx, make(pexec.F32, 1), 0)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "recv from rank 0") || time.Since(start) > time.Second {
		t.Fatalf("cancelled recv: %v after %v", err, time.Since(start))
	}
	// self-sends
	if err := cs[0].Send(ctx, pexec.F32{7}, 0); err != nil {
		t.Fatal(err)
	}
	m := make(pexec.F32, 1)
	if err := cs[0].Recv(ctx, m, 0); err != nil || m[0] != 7 {
		t.Fatalf("self: %v %v", m, err)
	}
}

func TestPeerDropFailsCalls(t *testing.T) {
	cs := world(t, 3)
	pending := make(chan error, 2)
	go func() { pending <- cs[0].Recv(context.Background(), make(pexec.F32, 1), 2) }()
	go func() {
		g, _ := cs[1].NewGroup(context.Background(), []int{1, 2})
		pending <- g.AllReduce(context.Background(), pexec.F32{1})
	}()
	time.Sleep(50 * time.Millisecond)
	// rank 2 dies: its connections drop without a goodbye
	for _, p := range cs[2].peers {
		if p.nc != nil {
			p.nc.Close()
		}
	}
	for i := 0; i < 2; i++ {
		select {
		case err := <-pending:
			var pe *PeerError
			if !errors.As(err, &pe) || pe.Rank != 2 || !strings.Contains(err.Error(), "lost connection to rank 2") {
				t.Fatalf("pending call: %v", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("pending call did not fail after the peer dropped")
		}
	}
	// later calls fail too, even to healthy peers
	if err := cs[0].Send(context.Background(), pexec.F32{1}, 1); err == nil || !strings.Contains(err.Error(), "rank 2") {
		t.Fatalf("later call: %v", err)
	}
}

func TestCloseIsNotAFailure(t *testing.T) {
	cs := world(t, 3)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := cs[1].Send(ctx, pexec.F32{float32(i)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	cs[1].Close() // sends what is queued first
	for i := 0; i < 3; i++ {
		m := make(pexec.F32, 1)
		if err := cs[0].Recv(ctx, m, 1); err != nil || m[0] != float32(i) {
			t.Fatalf("message %d: %v %v", i, m, err)
		}
	}
	err := cs[0].Recv(ctx, make(pexec.F32, 1), 1)
	if err == nil || !strings.Contains(err.Error(), "rank 1 closed its communicator") {
		t.Fatalf("recv after the peer closed: %v", err)
	}
	// ranks 0 and 2 still talk
	mustAll(t, run(t, []*Comm{cs[0], cs[2]}, func(i int, c *Comm) error {
		if i == 0 {
			return c.Send(ctx, pexec.F32{5}, 2)
		}
		return c.Recv(ctx, make(pexec.F32, 1), 0)
	}))
	if err := cs[1].Send(ctx, pexec.F32{1}, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestBarrier(t *testing.T) {
	const n = 5
	cs := world(t, n)
	var mu sync.Mutex
	var lastIn, firstOut time.Time
	mustAll(t, run(t, cs, func(r int, c *Comm) error {
		time.Sleep(time.Duration(r*30) * time.Millisecond)
		mu.Lock()
		if now := time.Now(); now.After(lastIn) {
			lastIn = now
		}
		mu.Unlock()
		if err := c.Barrier(context.Background()); err != nil {
			return err
		}
		mu.Lock()
		if now := time.Now(); firstOut.IsZero() || now.Before(firstOut) {
			firstOut = now
		}
		mu.Unlock()
		if s := c.Counter().Snapshot(); s.TotalCalls() != 0 || s.Messages() != 0 {
			return fmt.Errorf("barrier was counted: %+v", s)
		}
		return nil
	}))
	if firstOut.Before(lastIn) {
		t.Fatalf("a rank left the barrier %v before the last entered", lastIn.Sub(firstOut))
	}
}
