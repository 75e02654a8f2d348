package launch

import "syscall"

// sysProcAttr puts a child in its own process group (so a kill reaches its
// children too) and kills it if the launcher dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
