//go:build unix

package hoststat

import (
	"time"

	"golang.org/x/sys/unix"
)

// ownCPU is the CPU time (user and system) of this process and of its
// children that have exited and been waited for.
func ownCPU() (time.Duration, bool) {
	var self, children unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &self) != nil || unix.Getrusage(unix.RUSAGE_CHILDREN, &children) != nil {
		return 0, false
	}
	ns := self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano()
	return time.Duration(ns), true
}
