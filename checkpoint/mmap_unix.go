//go:build unix

package checkpoint

import (
	"os"
	"syscall"
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
