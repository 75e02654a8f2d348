package checkpoint

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelMinBytes is the size of each block a conversion from the mapping
// is split into (below it one goroutine converts: starting goroutines would
// cost more than they save), and the largest pread (readSegments): large
// enough that a read's request cost is small against its transfer.
const parallelMinBytes = 4 << 20

// forBlocks calls fn on consecutive blocks [lo, hi) covering [0, n) units of
// unitBytes source bytes each, each block about parallelMinBytes, from up
// to GOMAXPROCS goroutines. Blocks are handed out in order, so a mapping is
// faulted in front to back, a few blocks at a time. fn must write disjoint
// output per block; the first error it returns is returned.
func forBlocks(n, unitBytes int64, fn func(lo, hi int64) error) error {
	if n <= 0 {
		return nil
	}
	per := max(1, parallelMinBytes/max(unitBytes, 1))
	blocks := (n + per - 1) / per
	workers := min(int64(runtime.GOMAXPROCS(0)), blocks)
	if workers <= 1 {
		return fn(0, n)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := int64(0); w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b := next.Add(1) - 1
				if b >= blocks {
					return
				}
				lo := b * per
				if err := fn(lo, min(lo+per, n)); err != nil {
					once.Do(func() { first = err })
					next.Store(blocks) // stop handing out blocks
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, parallelMinBytes); return &b }}

func getScratch() *[]byte { return scratchPool.Get().(*[]byte) }

// readAt fills (*scratch)[:n] with n bytes of fd at off, growing the buffer
// when needed, and returns them.
func readAt(fd *os.File, scratch *[]byte, off, n int64) ([]byte, error) {
	if int64(cap(*scratch)) < n {
		*scratch = make([]byte, n)
	}
	b := (*scratch)[:n]
	_, err := fd.ReadAt(b, off)
	return b, err
}
