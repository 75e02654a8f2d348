//go:build unix && !linux

package launch

import "syscall"

// sysProcAttr puts a child in its own process group so a kill reaches its
// children too.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
