//go:build linux

package checkpoint

import "golang.org/x/sys/unix"

// adviseHuge asks the kernel to back b (whole huge pages, not yet touched)
// with transparent huge pages. A variable so that a test can stand in for a
// kernel that refuses it.
var adviseHuge = func(b []byte) error { return unix.Madvise(b, unix.MADV_HUGEPAGE) }
