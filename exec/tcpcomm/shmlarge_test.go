package tcpcomm

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/shmcomm"
)

// TestSharedMemoryPipelinesLargeChunks: ring collectives whose chunks are
// below, exactly at and above a ring's capacity (frames of 16 B of header
// and the chunk) give localcomm's bits and counts. A step sends its chunk
// straight from the caller's elements and sums the received chunk straight
// out of the ring, pipelined through it, so the sums must still be
// commcount's, in its order. Each collective follows a point-to-point send
// larger than the ring (it goes through the writer goroutine, and the
// collective's message queues behind it on the same ring), every other
// one an empty send, so the fall-back path, a message begun by an earlier
// read and the direct path are all exercised.
//
// Rings of 4,096 B carry frames of at most 4,080 B of payload: 1,020
// elements. With n ranks an all-reduce of 1,020·n elements has chunks of
// exactly 1,020 (at the ring), one more element puts a chunk above it;
// 0 to 7 elements leave some chunks empty. 1 << 20 elements (4 MiB) over
// the default 256 KiB ring are chunks of 2 MiB (2 ranks) and 1 MiB (4),
// 8 and 4 ring-fulls each.
func TestSharedMemoryPipelinesLargeChunks(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	for _, tc := range []struct {
		n, ring int
		counts  []int
	}{
		{2, shmcomm.MinRingBytes, []int{0, 1, 7, 2039, 2040, 2041, 10_001, 65_537}},
		{4, shmcomm.MinRingBytes, []int{1, 3, 4080, 4081, 4083, 99_999}},
		{3, shmcomm.MinRingBytes, []int{3060, 3061, 12_345}},
		{2, 0, []int{65_531, 1 << 20}},
		{4, 0, []int{262_139, 1 << 20}},
	} {
		t.Run(fmt.Sprintf("ranks=%d/ring=%d", tc.n, tc.ring), func(t *testing.T) {
			dir := t.TempDir()
			cs := worldWith(t, tc.n, func(int) Options {
				return Options{ListenHost: "127.0.0.1", Transport: TransportSHM, ShmDir: dir, RingBytes: tc.ring}
			})
			for r, c := range cs {
				if shm, _ := c.Transports(); shm != tc.n-1 {
					t.Fatalf("rank %d shares memory with %d peers, want %d", r, shm, tc.n-1)
				}
			}
			n := tc.n
			type out struct {
				bufs []pexec.F32
				snap commcount.Snapshot
			}
			play := func(r int, c pexec.Comm) (o out, err error) {
				all := make([]int, n)
				for i := range all {
					all[i] = i
				}
				g, err := c.NewGroup(context.Background(), all)
				if err != nil {
					return o, err
				}
				rng := rand.New(rand.NewSource(int64(r + 10*n)))
				fill := func(b pexec.F32) pexec.F32 {
					for i := range b {
						b[i] = rng.Float32()*2 - 1 // not integers: the order of the sums shows
					}
					return b
				}
				ctx := context.Background()
				for k, count := range tc.counts {
					p2p := 1500 * (1 - k%2) // every other count: none
					if err := c.Send(ctx, fill(make(pexec.F32, p2p)), (r+1)%n); err != nil {
						return o, err
					}
					b := fill(make(pexec.F32, count))
					if err := g.AllReduce(ctx, b); err != nil {
						return o, fmt.Errorf("all-reduce of %d elements: %w", count, err)
					}
					send := fill(make(pexec.F32, count/n+1))
					gathered := make(pexec.F32, n*len(send))
					if err := g.AllGather(ctx, send, gathered); err != nil {
						return o, fmt.Errorf("all-gather of %d elements: %w", len(send), err)
					}
					got := make(pexec.F32, p2p)
					if err := c.Recv(ctx, got, (r-1+n)%n); err != nil {
						return o, err
					}
					o.bufs = append(o.bufs, b, gathered, got)
				}
				if err := c.Flush(ctx); err != nil {
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
			ref := localcomm.Comms(n)
			want := make([]out, n)
			errs := make([]error, n)
			done := make(chan struct{}, n)
			for r := range ref {
				go func() { want[r], errs[r] = play(r, ref[r]); done <- struct{}{} }()
			}
			for range ref {
				<-done
			}
			mustAll(t, errs)
			for r := 0; r < n; r++ {
				for k, b := range shm[r].bufs {
					w := want[r].bufs[k]
					if len(b) != len(w) {
						t.Fatalf("rank %d, buffer %d: %d elements, localcomm %d", r, k, len(b), len(w))
					}
					for i := range b {
						if math.Float32bits(b[i]) != math.Float32bits(w[i]) {
							t.Fatalf("rank %d, buffer %d (count %d, %s): element %d is %v, localcomm's %v",
								r, k, tc.counts[k/3], [3]string{"all-reduce", "all-gather", "recv"}[k%3], i, b[i], w[i])
						}
					}
				}
				if d := commcount.Diff(want[r].snap, shm[r].snap); len(d) > 0 {
					t.Fatalf("rank %d: counts differ from localcomm's: %v", r, d)
				}
				// every count has 2(n−1) + (n−1) collective steps to the next
				// rank; those after an empty send go straight unless the
				// writer goroutine has not yet counted the previous count's
				// send as written (a busy machine), so only none is a failure
				next := cs[r].peers[(r+1)%n]
				if next.directSteps.Load() == 0 {
					t.Fatalf("rank %d: no collective step sent straight from the caller's elements", r)
				}
				t.Logf("rank %d: %d of %d collective steps straight", r, next.directSteps.Load(), 3*(n-1)*len(tc.counts))
			}
		})
	}
}
