//go:build !linux

package checkpoint

import "os"

// openDirect: direct I/O is used on Linux only.
func openDirect(string) *os.File { return nil }
