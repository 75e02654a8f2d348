//go:build linux

package checkpoint

import (
	"os"
	"syscall"
)

// openDirect is path opened read-only for direct I/O, or nil where it
// cannot be (a file system without O_DIRECT refuses the open).
func openDirect(path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return f
}
