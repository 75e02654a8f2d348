//go:build linux

package checkpoint

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// populateWriteSystem is madvise MADV_POPULATE_WRITE on b: every page
// faulted in writable, inside the kernel, with no trap per page and no
// value written (madvise(2)).
func populateWriteSystem(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_WRITE) }

// populateRefused reports whether err is the kernel's answer to advice it
// does not have (EINVAL before Linux 5.14, ENOSYS without madvise): there
// is nothing to populate with, and nothing has failed.
func populateRefused(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS)
}

// pageResidentSystem is mincore's answer for the page b: whether it is in
// memory. An error (none is expected for the heap's own memory) reads as
// not present: the advice is then asked, as without the check.
func pageResidentSystem(b []byte) bool {
	var vec [1]byte
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	return errno == 0 && vec[0]&1 != 0
}
