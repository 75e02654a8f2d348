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
