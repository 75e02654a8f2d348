//go:build !linux

package calib

import "time"

// threadCPU is not read on this host: op times stay wall times
// (opprocs.go).
func threadCPU() (time.Duration, bool) { return 0, false }
