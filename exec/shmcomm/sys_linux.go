package shmcomm

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

const (
	futexWaitOp = 0 // FUTEX_WAIT (shared, not _PRIVATE: the word is in a file mapped by two processes)
	futexWakeOp = 1 // FUTEX_WAKE
)

// futexWait sleeps while *addr == val, for at most d (or until woken).
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes the sleepers on addr.
func futexWake(addr *uint32) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1<<30, 0, 0, 0)
}

// reserve gives the file its pages now, so a full tmpfs is an error here
// rather than a SIGBUS at the first write into the mapping.
func reserve(f *os.File, size int64) error {
	return syscall.Fallocate(int(f.Fd()), 0, 0, size)
}
