//go:build unix

package calib

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the CPU time this process has run (user and system, every
// thread), and whether the host says.
func processCPU() (time.Duration, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// hostClockNs is the host's monotonic clock (CLOCK_MONOTONIC) in ns: one
// clock for every process of the host, so stamps of two ranks compare
// (exitlag.go).
func hostClockNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
