package remote

import "syscall"

// childProcAttr makes a spawned server die with the process that spawned
// it: the kernel sends it SIGKILL when its parent ends, however the parent
// ends (SIGKILL included), as `run --nproc` does for its ranks.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
