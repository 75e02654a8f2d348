//go:build !linux

package checkpoint

import "os"

// adviseExplicit is advice only; without posix_fadvise it does nothing.
func adviseExplicit(*os.File) {}

// adviseWillNeed is advice only; without posix_fadvise it does nothing.
func adviseWillNeed(*os.File, int64, int64) {}
