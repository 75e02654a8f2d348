//go:build !unix

package checkpoint

import (
	"io"
	"os"
)

// mapFile reads the file into memory where mmap is not available.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}

func willNeed([]byte, int64, int64) {}

// preadable is false: mapFile has read the whole file into memory.
const preadable = false
