//go:build linux

package checkpoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// adviseExplicit turns the kernel's readahead off for reads through f
// (POSIX_FADV_RANDOM): its large ranges are read by explicit preads of the
// slices alone, and readahead past a slice would bring in the other ranks'
// shards (with sequential advice a TP-2 rank read the whole file). The
// mapping's own advice (MADV_WILLNEED on long-row column ranges) is
// separate. Advice only: errors are ignored.
func adviseExplicit(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
}

// adviseWillNeed asks the kernel to start reading n bytes of f at off into
// the page cache (POSIX_FADV_WILLNEED; readahead advice does not apply to
// it) and returns once the reads are queued. Advice only: errors are
// ignored.
func adviseWillNeed(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
}
