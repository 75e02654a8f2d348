//go:build unix

package checkpoint

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only. Writing to the mapping faults, so a
// view handed to a caller cannot corrupt the file.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}

// willNeed asks the kernel to start reading bytes [lo, hi) of a mapping
// whose base is page-aligned, ahead of the conversion loop: on a cold cache
// this turns page faults one page at a time into readahead. Advice only:
// errors are ignored.
func willNeed(mapping []byte, lo, hi int64) {
	if hi-lo < 1<<20 { // small ranges: readahead on fault is enough
		return
	}
	lo &^= int64(syscall.Getpagesize() - 1)
	_ = unix.Madvise(mapping[lo:hi], unix.MADV_WILLNEED) // x/sys: syscall has no Madvise on every unix (darwin)
}

// preadable says large ranges are read with pread (the mapping is not in
// memory until faulted).
const preadable = true
