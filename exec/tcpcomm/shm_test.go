package tcpcomm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/shmcomm"
)

// testTransport is the transport world connects with (TestSharedMemory
// runs the whole suite again over shared memory).
var testTransport = TransportTCP

// TestSharedMemory runs every in-process test of the communicator again
// with every pair on shared memory: sums, chunking, counts, errors, a
// dropped peer, a goodbye, the barrier.
func TestSharedMemory(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	testTransport = TransportSHM
	defer func() { testTransport = TransportTCP }()
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"AllReduceRing", TestAllReduceRing},
		{"AllReduceDeterministic", TestAllReduceDeterministic},
		{"AllGather", TestAllGather},
		{"P2PFIFOAndCounts", TestP2PFIFOAndCounts},
		{"GroupAndP2PTrafficApart", TestGroupAndP2PTrafficApart},
		{"ErrorsNameSizesTypesAndPeers", TestErrorsNameSizesTypesAndPeers},
		{"PeerDropFailsCalls", TestPeerDropFailsCalls},
		{"CloseIsNotAFailure", TestCloseIsNotAFailure},
		{"Barrier", TestBarrier},
	} {
		t.Run(tc.name, tc.f)
	}
}

// shmWorld is world over shared memory, checked to use it for every pair.
func shmWorld(t *testing.T, n int) []*Comm {
	t.Helper()
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	testTransport = TransportSHM
	defer func() { testTransport = TransportTCP }()
	cs := world(t, n)
	for r, c := range cs {
		if shm, tcp := c.Transports(); shm != n-1 || tcp != 0 {
			t.Fatalf("rank %d: %d shared-memory and %d TCP peers, want %d and 0", r, shm, tcp, n-1)
		}
		if d := c.Describe(); !strings.HasPrefix(d, "shm (") {
			t.Fatalf("rank %d describes itself as %q", r, d)
		}
	}
	return cs
}

// TestSharedMemoryMatchesLocalcomm: the same random inputs through
// exec/localcomm (the in-process reference) and through shared memory give
// the same bits and the same counts, for all-reduce (sizes below, at and
// above the ring's 256 KiB: 300,000 elements make 600 KB chunks at 2 ranks,
// streamed in pieces), all-gather and send/recv.
func TestSharedMemoryMatchesLocalcomm(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cs := shmWorld(t, n)
			ref := localcomm.Comms(n)
			counts := []int{1, 7, 1000, 65_536, 300_000}
			type out struct {
				reduced  []pexec.F32
				gathered pexec.F32
				got      pexec.F32
				snap     commcount.Snapshot
			}
			play := func(r int, c pexec.Comm) (out, error) {
				var o out
				all := make([]int, n)
				for i := range all {
					all[i] = i
				}
				g, err := c.NewGroup(context.Background(), all)
				if err != nil {
					return o, err
				}
				rng := rand.New(rand.NewSource(int64(r)))
				for _, count := range counts {
					b := make(pexec.F32, count)
					for i := range b {
						b[i] = rng.Float32()*2 - 1 // not integers: the order of the sums shows
					}
					if err := g.AllReduce(context.Background(), b); err != nil {
						return o, err
					}
					o.reduced = append(o.reduced, b)
				}
				send := pexec.F32{float32(r), float32(r) / 3}
				o.gathered = make(pexec.F32, 2*n)
				if err := g.AllGather(context.Background(), send, o.gathered); err != nil {
					return o, err
				}
				// a ring of sends: each rank to the next, 5,000 elements
				msg := make(pexec.F32, 5000)
				for i := range msg {
					msg[i] = float32(r*i) / 7
				}
				if err := c.Send(context.Background(), msg, (r+1)%n); err != nil {
					return o, err
				}
				o.got = make(pexec.F32, 5000)
				if err := c.Recv(context.Background(), o.got, (r-1+n)%n); err != nil {
					return o, err
				}
				if err := c.Flush(context.Background()); err != nil {
					return o, err
				}
				o.snap = c.Counter().Snapshot()
				return o, nil
			}
			shm := make([]out, n)
			mustAll(t, run(t, cs, func(r int, c *Comm) error {
				var err error
				shm[r], err = play(r, c)
				return err
			}))
			want := make([]out, n)
			errs := make([]error, n)
			done := make(chan int, n)
			for r := range ref {
				go func() { want[r], errs[r] = play(r, ref[r]); done <- r }()
			}
			for range ref {
				<-done
			}
			mustAll(t, errs)
			same := func(a, b pexec.F32) bool {
				if len(a) != len(b) {
					return false
				}
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
						return false
					}
				}
				return true
			}
			for r := 0; r < n; r++ {
				for k := range counts {
					if !same(shm[r].reduced[k], want[r].reduced[k]) {
						t.Fatalf("rank %d: all-reduce of %d elements differs from localcomm's", r, counts[k])
					}
				}
				if !same(shm[r].gathered, want[r].gathered) || !same(shm[r].got, want[r].got) {
					t.Fatalf("rank %d: all-gather or recv differs from localcomm's", r)
				}
				if d := commcount.Diff(want[r].snap, shm[r].snap); len(d) > 0 {
					t.Fatalf("rank %d: counts differ from localcomm's: %v", r, d)
				}
			}
		})
	}
}

// TestSharedMemoryLeavesNoFile: once New returns, every segment is unlinked
// (the mappings stay), so nothing is left behind however the ranks end.
func TestSharedMemoryLeavesNoFile(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	dir := t.TempDir()
	cs := worldWith(t, 3, func(int) Options { return Options{ListenHost: "127.0.0.1", Transport: TransportSHM, ShmDir: dir} })
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 0 {
		t.Fatalf("after set-up the segment directory holds %v (%v), want nothing", ents, err)
	}
	if shm, _ := cs[0].Transports(); shm != 2 {
		t.Fatalf("rank 0 shares memory with %d peers, want 2", shm)
	}
}

// TestTransportChoice: a rank that says tcp keeps its pairs on TCP (its
// peers on shared memory among themselves); a directory where no segment
// can be made is an error naming the pair under shm and a fallback to TCP,
// said by Describe, under auto.
func TestTransportChoice(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	dir := t.TempDir()
	cs := worldWith(t, 3, func(r int) Options {
		o := Options{ListenHost: "127.0.0.1", Transport: TransportAuto, ShmDir: dir}
		if r == 2 {
			o.Transport = TransportTCP
		}
		return o
	})
	for r, want := range [][2]int{{1, 1}, {1, 1}, {0, 2}} { // (shm, tcp): 0–1 share memory, 2 is on TCP with both
		if shm, tcp := cs[r].Transports(); shm != want[0] || tcp != want[1] {
			t.Errorf("rank %d: %d shm, %d tcp peers, want %v", r, shm, tcp, want)
		}
	}
	mustAll(t, run(t, cs, func(r int, c *Comm) error {
		g, err := c.NewGroup(context.Background(), []int{0, 1, 2})
		if err != nil {
			return err
		}
		b := pexec.F32{float32(r + 1)}
		if err := g.AllReduce(context.Background(), b); err != nil {
			return err
		}
		if b[0] != 6 { // 1 + 2 + 3
			return fmt.Errorf("sum %v, want 6", b[0])
		}
		return nil
	}))

	missing := dir + "/missing"
	cs = worldWith(t, 2, func(int) Options { return Options{ListenHost: "127.0.0.1", Transport: TransportAuto, ShmDir: missing} })
	if d := cs[1].Describe(); !strings.HasPrefix(d, "tcp (") || !strings.Contains(d, "shared memory refused: rank 0:") || !strings.Contains(d, missing) {
		t.Errorf("auto without a usable directory: %q", d)
	}
	_, errs := worldErrs(t, 2, func(int) Options { return Options{ListenHost: "127.0.0.1", Transport: TransportSHM, ShmDir: missing} })
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "transport shm: ranks") || !strings.Contains(err.Error(), "cannot share memory") {
			t.Errorf("rank %d under shm without a usable directory: %v", r, err)
		}
	}
}

func TestTransportNames(t *testing.T) {
	for _, s := range []string{"auto", "TCP", " shm "} {
		if _, err := ParseTransport("--transport", s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseTransport("--transport", "rdma"); err == nil || err.Error() != `--transport: unknown transport "rdma" (want auto, tcp or shm)` {
		t.Errorf("rdma: %v", err)
	}
	t.Setenv(TransportEnv, "udp")
	if _, err := NewWith(context.Background(), nil, 0, 1, Options{}); err == nil || !strings.Contains(err.Error(), TransportEnv+`: unknown transport "udp"`) {
		t.Errorf("bad %s: %v", TransportEnv, err)
	}
	t.Setenv(TransportEnv, "tcp")
	c, err := NewWith(context.Background(), nil, 0, 1, Options{})
	if err != nil || c.transport != TransportTCP {
		t.Fatalf("%s=tcp: %v, %v", TransportEnv, c, err)
	}
	c.Close()
}

// TestSharedMemoryPeerStopsMidCollective: a rank that stops taking part in
// an all-reduce larger than the ring (its peer's writer is left waiting for
// room) and then drops its connection without a goodbye, as a killed
// process does, fails the others' pending calls with a PeerError within the
// wait's bound, not a hang.
//
// With 3 ranks the waiting rank 0 sends to rank 1 and receives from rank
// 2, two segments, so it waits for both at once (shmcomm.SleepBoth); rank
// 2's drop must still end it.
func TestSharedMemoryPeerStopsMidCollective(t *testing.T) {
	for _, n := range []int{2, 3} {
		cs := shmWorld(t, n)
		all := []int{0, 1, 2}[:n]
		g, err := cs[0].NewGroup(context.Background(), all)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- g.AllReduce(context.Background(), make(pexec.F32, 400_000)) }() // chunks of 800 KB (2 ranks) or 533 KB (3): 2–3 rings' worth
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		for _, p := range cs[n-1].peers {
			if p.nc != nil {
				p.nc.Close()
			}
		}
		select {
		case err := <-done:
			var pe *PeerError
			if !errors.As(err, &pe) || pe.Rank != n-1 {
				t.Fatalf("%d ranks: pending all-reduce: %v", n, err)
			}
			t.Logf("%d ranks: failed %v after the drop: %v", n, time.Since(start), err)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d ranks: the all-reduce did not fail within 5 s of the peer's drop", n)
		}
	}
}

// TestSharedMemoryCloseWithUnreadSend: a send larger than the ring to a
// peer that never reads it leaves the writer waiting for room; when the
// peer closes, the writer stops, Flush names the peer, and Close returns
// (unmapping the segment the writer was using) without a hang.
func TestSharedMemoryCloseWithUnreadSend(t *testing.T) {
	cs := shmWorld(t, 2)
	ctx := context.Background()
	if err := cs[0].Send(ctx, make(pexec.F32, 1<<20), 1); err != nil { // 4 MiB: 16 rings' worth
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the writer fills the ring and waits
	cs[1].Close()
	done := make(chan error, 1)
	go func() { done <- cs[0].Flush(ctx) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "rank 1 closed its communicator") {
			t.Fatalf("flush to a closed peer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("flush did not return within 5 s of the peer's close")
	}
	closed := make(chan struct{})
	go func() { cs[0].Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return within 5 s")
	}
}

// TestMixedHosts: ranks 0–1 on one host and 2–3 on another share memory
// within each host and use TCP across; the ring all-reduce over all four
// (its 0→1 and 2→3 steps on shared memory, 1→2 and 3→0 on TCP) gives the
// exact sums and commcount's counts.
func TestMixedHosts(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	dir := t.TempDir()
	cs := worldWith(t, 4, func(r int) Options {
		return Options{ListenHost: "127.0.0.1", Transport: TransportSHM, ShmDir: dir, host: []string{"a", "a", "b", "b"}[r]}
	})
	for r, c := range cs {
		if shm, tcp := c.Transports(); shm != 1 || tcp != 2 {
			t.Fatalf("rank %d: %d shm, %d tcp peers, want 1 and 2", r, shm, tcp)
		}
		if peer := r ^ 1; cs[r].peers[peer].shm == nil {
			t.Fatalf("rank %d does not share memory with rank %d on its host", r, peer)
		}
	}
	const count = 1001
	mustAll(t, run(t, cs, func(r int, c *Comm) error {
		g, err := c.NewGroup(context.Background(), []int{0, 1, 2, 3})
		if err != nil {
			return err
		}
		b := make(pexec.F32, count)
		for i := range b {
			b[i] = float32((r + 1) * (i % 13)) // integers: the sum is exact in any order
		}
		if err := g.AllReduce(context.Background(), b); err != nil {
			return err
		}
		for i, v := range b {
			if want := float32(10 * (i % 13)); v != want { // (1+2+3+4) × (i mod 13)
				return fmt.Errorf("element %d = %v, want %v", i, v, want)
			}
		}
		msgs, wire := commcount.RingAllReduceWire(4, r, count, 4)
		want := commcount.Snapshot{
			Calls: map[commcount.Op]int64{commcount.AllReduce: 1},
			Bytes: map[commcount.Op]int64{commcount.AllReduce: 4 * count},
			Peers: map[int]commcount.PeerCount{(r + 1) % 4: {Messages: msgs, WireBytes: wire}},
		}
		if d := commcount.Diff(want, c.Counter().Snapshot()); len(d) > 0 {
			return fmt.Errorf("counts differ from commcount: %v", d)
		}
		return nil
	}))
}
