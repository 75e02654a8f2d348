//go:build !unix

package calib

import "time"

// processCPU is not read on this host: the op times' stretch is not
// measured (opprocs.go).
func processCPU() (time.Duration, bool) { return 0, false }
