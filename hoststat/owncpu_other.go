//go:build !unix

package hoststat

import "time"

// ownCPU: the host does not say.
func ownCPU() (time.Duration, bool) { return 0, false }
