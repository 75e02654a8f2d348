//go:build !linux

package remote

import "syscall"

// childProcAttr is the default elsewhere: there is no parent-death signal
// outside Linux, so a spawned server outlives a parent killed with SIGKILL.
func childProcAttr() *syscall.SysProcAttr { return nil }
