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
func BenchmarkAllReduce(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, bytes := range []int{4 << 10, 64 << 10, 256 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("ranks=%d/bytes=%d", n, bytes), func(b *testing.B) {
				cs := world(b, n)
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
			})
		}
	}
}
