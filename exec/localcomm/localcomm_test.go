package localcomm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
)

// parallel runs f on every rank at once and fails on the first error.
func parallel(t *testing.T, comms []*Comm, f func(c *Comm) error) {
	t.Helper()
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for i, c := range comms {
		wg.Go(func() { errs[i] = f(c) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestAllReduceRingOrder: 3 ranks, 10 elements (chunks of 4, 3, 3). Chunk c
// is summed around the ring starting at position c: x_{c+2} + (x_{c+1} + x_c).
// Element 0 (chunk 0): 1 + (1e8 + −1e8) = 1 in float32, where the order
// (1e8 + 1) + −1e8 would give 0. Element 4 (chunk 1): x_0 + (x_2 + x_1) =
// 1e8 + (1 + −1e8) = 0 (1 + −1e8 rounds to −1e8).
func TestAllReduceRingOrder(t *testing.T) {
	comms := New(3)
	bufs := make([]pexec.F32, 3)
	for r := range bufs {
		bufs[r] = make(pexec.F32, 10)
		for i := range bufs[r] {
			bufs[r][i] = float32(r*100 + i)
		}
	}
	bufs[0][0], bufs[1][0], bufs[2][0] = 1e8, -1e8, 1
	bufs[0][4], bufs[1][4], bufs[2][4] = 1e8, -1e8, 1
	parallel(t, comms, func(c *Comm) error {
		g, err := c.NewGroup(context.Background(), []int{0, 1, 2})
		if err != nil {
			return err
		}
		return g.AllReduce(context.Background(), bufs[c.Rank()])
	})
	for r := range bufs {
		if bufs[r][0] != 1 || bufs[r][4] != 0 {
			t.Fatalf("rank %d: element 0 = %g (want 1), element 4 = %g (want 0)", r, bufs[r][0], bufs[r][4])
		}
		for i := 1; i < 10; i++ {
			if i != 4 && bufs[r][i] != float32(300+3*i) {
				t.Fatalf("rank %d element %d = %g, want %d", r, i, bufs[r][i], 300+3*i)
			}
		}
		// Counts are commcount's: one call of 40 B; RingAllReduceWire(3, r, 10, 4) to the next rank.
		s := comms[r].Counter().Snapshot()
		msgs, wire := commcount.RingAllReduceWire(3, r, 10, 4)
		if s.Calls[commcount.AllReduce] != 1 || s.Bytes[commcount.AllReduce] != 40 || s.Peers[(r+1)%3] != (commcount.PeerCount{Messages: msgs, WireBytes: wire}) {
			t.Fatalf("rank %d counted %+v", r, s)
		}
	}
}

func TestAllGatherRankOrder(t *testing.T) {
	comms := New(4)
	recv := make([]pexec.F32, 4)
	// A group of the odd ranks: position 0 is rank 1, position 1 is rank 3.
	parallel(t, comms, func(c *Comm) error {
		ranks := []int{0, 2}
		if c.Rank()%2 == 1 {
			ranks = []int{1, 3}
		}
		g, err := c.NewGroup(context.Background(), ranks)
		if err != nil {
			return err
		}
		send := pexec.F32{float32(c.Rank()), float32(c.Rank()) + 0.5}
		recv[c.Rank()] = make(pexec.F32, 4)
		return g.AllGather(context.Background(), send, recv[c.Rank()])
	})
	for r, want := range []pexec.F32{{0, 0.5, 2, 2.5}, {1, 1.5, 3, 3.5}, {0, 0.5, 2, 2.5}, {1, 1.5, 3, 3.5}} {
		for i := range want {
			if recv[r][i] != want[i] {
				t.Fatalf("rank %d gathered %v, want %v", r, recv[r], want)
			}
		}
		// One call of 16 B, one message of 8 B to the next member.
		s := comms[r].Counter().Snapshot()
		next := []int{2, 3, 0, 1}[r]
		if s.Calls[commcount.AllGather] != 1 || s.Bytes[commcount.AllGather] != 16 || s.Peers[next] != (commcount.PeerCount{Messages: 1, WireBytes: 8}) {
			t.Fatalf("rank %d counted %+v", r, s)
		}
	}
}

func TestGroupOfOneCountsAndMovesNothing(t *testing.T) {
	c := New(2)[1]
	g, err := c.NewGroup(context.Background(), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	buf := pexec.F32{1, 2}
	if err := g.AllReduce(context.Background(), buf); err != nil || buf[0] != 1 || buf[1] != 2 {
		t.Fatalf("all-reduce of one: %v %v", buf, err)
	}
	s := c.Counter().Snapshot()
	if s.Calls[commcount.AllReduce] != 1 || s.Bytes[commcount.AllReduce] != 8 || len(s.Peers) != 0 {
		t.Fatalf("counted %+v", s)
	}
}

func TestSendIsNonBlockingFIFOAndCopies(t *testing.T) {
	ctx := context.Background()
	comms := New(2)
	buf := pexec.F32{1, 2, 3}
	for i := 0; i < 5; i++ { // nobody receives yet: must not block
		buf[0] = float32(i)
		if err := comms[0].Send(ctx, buf, 1); err != nil {
			t.Fatal(err)
		}
	}
	got := make(pexec.F32, 3)
	for i := 0; i < 5; i++ {
		if err := comms[1].Recv(ctx, got, 0); err != nil {
			t.Fatal(err)
		}
		if got[0] != float32(i) {
			t.Fatalf("message %d carries %g: not FIFO or not copied on send", i, got[0])
		}
	}
	s0, s1 := comms[0].Counter().Snapshot(), comms[1].Counter().Snapshot()
	if s0.Calls[commcount.Send] != 5 || s0.Bytes[commcount.Send] != 60 || s0.Peers[1] != (commcount.PeerCount{Messages: 5, WireBytes: 60}) {
		t.Fatalf("sender counted %+v", s0)
	}
	if s1.Calls[commcount.Recv] != 5 || s1.Bytes[commcount.Recv] != 60 || len(s1.Peers) != 0 {
		t.Fatalf("receiver counted %+v", s1)
	}
	comms[0].Send(ctx, pexec.F32{1}, 1)
	if err := comms[1].Recv(ctx, got, 0); err == nil || !strings.Contains(err.Error(), "1 elements, buffer 3") {
		t.Fatalf("size mismatch: %v", err)
	}
}

func TestCancellationUnblocks(t *testing.T) {
	comms := New(2)
	ctx, cancel := context.WithCancel(context.Background())
	g, err := comms[0].NewGroup(ctx, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	go func() { done <- comms[0].Recv(ctx, make(pexec.F32, 1), 1) }()
	go func() { done <- g.AllReduce(ctx, make(pexec.F32, 4)) }() // rank 1 never joins
	go func() { done <- comms[0].Barrier(ctx) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	for i := 0; i < 3; i++ {
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("want context.Canceled, got %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a blocked call did not return after cancellation")
		}
	}
	// Close fails pending calls the same way.
	go func() { done <- comms[1].Recv(context.Background(), make(pexec.F32, 1), 0) }()
	time.Sleep(10 * time.Millisecond)
	comms[1].Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("recv on a closed communicator: %v", err)
	}
}

func TestBarrierAndGroupChecks(t *testing.T) {
	comms := New(3)
	for round := 0; round < 3; round++ {
		parallel(t, comms, func(c *Comm) error { return c.Barrier(context.Background()) })
	}
	ctx := context.Background()
	for _, ranks := range [][]int{{1, 2}, {0, 0}, {2, 0}, {0, 5}} {
		if _, err := comms[0].NewGroup(ctx, ranks); err == nil {
			t.Fatalf("group %v accepted for rank 0", ranks)
		}
	}
	if _, err := comms[0].NewGroup(ctx, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := comms[0].Send(ctx, pexec.F32{1}, 3); err == nil {
		t.Fatal("send to rank 3 of 3 accepted")
	}
}
