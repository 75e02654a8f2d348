//go:build !unix

package calib

import "time"

// processCPU is not read on this host: the op times' stretch is not
// measured (opprocs.go).
func processCPU() (time.Duration, bool) { return 0, false }

// hostClockNs is the wall clock in ns where the host's monotonic clock
// is not read: one clock for the host's processes, as exitlag.go needs.
func hostClockNs() int64 { return time.Now().UnixNano() }
