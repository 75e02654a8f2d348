package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
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

// directReads counts the reads readAtDirect made with direct I/O (tests
// check that the path is taken).
var directReads atomic.Int64

// preadDirect is the read readAtDirect makes through the file opened for
// direct I/O: (*os.File).ReadAt, replaced only by the tests of a kernel
// that refuses it.
var preadDirect = (*os.File).ReadAt

// readAtDirect is readAt through direct, the file opened for direct I/O,
// where it is set and the read can be one: off a multiple of the page size
// (planReads starts every read on a page), the length rounded up to pages
// (a read past the end of the file comes back short: at least n bytes is
// enough) and the buffer page-aligned (the heap's large buffers are). Else,
// or where the kernel refuses the direct read (EINVAL: a file system or
// device without it), through fd, the page cache.
func readAtDirect(direct, fd *os.File, scratch *[]byte, off, n int64) ([]byte, error) {
	page := int64(os.Getpagesize())
	if direct == nil || off%page != 0 {
		return readAt(fd, scratch, off, n)
	}
	rn := (n + page - 1) &^ (page - 1)
	if int64(cap(*scratch)) < rn {
		*scratch = make([]byte, rn)
	}
	b := (*scratch)[:rn]
	if uintptr(unsafe.Pointer(&b[0]))%uintptr(page) != 0 {
		return readAt(fd, scratch, off, n)
	}
	got, err := preadDirect(direct, b, off)
	if int64(got) >= n {
		directReads.Add(1)
		return b[:n], nil
	}
	if errors.Is(err, syscall.EINVAL) {
		return readAt(fd, scratch, off, n)
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s: %d bytes at %d, read %d: %w", fd.Name(), n, off, got, io.ErrUnexpectedEOF)
	}
	return nil, err
}

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
