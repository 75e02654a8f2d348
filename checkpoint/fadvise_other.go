//go:build !linux

package checkpoint

import "os"

// adviseExplicit is advice only; without posix_fadvise it does nothing.
func adviseExplicit(*os.File) {}
