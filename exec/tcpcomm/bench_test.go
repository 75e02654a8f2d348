package tcpcomm

import (
	"context"
	"fmt"
	"sync"
	"testing"

	pexec "github.com/partbench/partbench/exec"
)

// BenchmarkAllReduce times the ring all-reduce among n goroutine ranks of
// one process over loopback, per call (rank 0's view: every rank runs b.N
// calls back to back), at the sizes where 4 ranks on a 2-core machine
// were slow (4–256 KiB) and at 1 MiB beside them. SetBytes makes the
// reported MB/s the payload's algorithm bandwidth.
//
// Each size runs over both transports (the ranks are on one host, so shm
// puts every pair on shared memory), and at 1 KiB and 512 B: the tiny test
// configs' decode all-reduce (batch 4 × hidden 64 × 4 B) and its prefill
// size per token row pair.
func BenchmarkAllReduce(b *testing.B) {
	for _, tr := range []Transport{TransportTCP, TransportSHM} {
		for _, n := range []int{2, 4} {
			for _, bytes := range []int{512, 1 << 10, 4 << 10, 64 << 10, 256 << 10, 1 << 20} {
				b.Run(fmt.Sprintf("transport=%s/ranks=%d/bytes=%d", tr, n, bytes), func(b *testing.B) {
					benchAllReduce(b, tr, n, bytes)
				})
			}
		}
	}
}

func benchAllReduce(b *testing.B, tr Transport, n, bytes int) {
	dir := b.TempDir()
	cs := worldWith(b, n, func(int) Options { return Options{ListenHost: "127.0.0.1", Transport: tr, ShmDir: dir} })
	ctx := context.Background()
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	groups := make([]pexec.Group, n)
	bufs := make([]pexec.F32, n)
	for r, c := range cs {
		g, err := c.NewGroup(ctx, all)
		if err != nil {
			b.Fatal(err)
		}
		groups[r], bufs[r] = g, make(pexec.F32, bytes/4)
	}
	b.SetBytes(int64(bytes))
	b.ResetTimer()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < b.N; i++ {
				if err := groups[r].AllReduce(ctx, bufs[r]); err != nil {
					errs[r] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			b.Fatalf("rank %d: %v", r, err)
		}
	}
}
