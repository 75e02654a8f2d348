//go:build linux

package exec

import "golang.org/x/sys/unix"

// checkScheduling refuses this process's real-time scheduling policy
// (schedulingError); where the policy cannot be read it lets the run go on.
func checkScheduling() error {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return nil
	}
	return schedulingError(int(a.Policy), a.Priority)
}
