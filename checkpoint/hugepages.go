package checkpoint

import "unsafe"

// hugePageBytes is the size of a transparent huge page on the machines
// partbench loads on (x86-64 and arm64 with 4 KiB base pages).
const hugePageBytes = 2 << 20

// NewFloat32s is n zeroed float32 values for a tensor about to be written
// whole (a load's destination). Where the operating system allows it
// (Linux with transparent huge pages in "madvise" or "always" mode), the
// part of the values that covers whole 2 MiB pages is advised as huge-page
// memory before anything touches it, so that the first write faults in 2
// MiB at a time instead of 4 KiB: at 4 KiB a page the faults were more than
// half the CPU of a fresh process's pre-sharded load (docs/measurements/
// speed.md, section 35). Where the advice is refused (no huge-page support,
// another system) the values are the same, only faulted in 4 KiB at a time;
// memory the Go heap reuses is already resident and the advice changes
// nothing.
func NewFloat32s(n int) []float32 {
	s := make([]float32, n)
	if n == 0 {
		return s
	}
	lo, hi := hugeRange(uintptr(unsafe.Pointer(&s[0])), uintptr(n)*4)
	if hi > lo {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), n*4)
		base := uintptr(unsafe.Pointer(&s[0]))
		_ = adviseHuge(b[lo-base : hi-base]) // refused: 4 KiB pages, same values
	}
	return s
}

// hugeRange is the part [lo, hi) of the n bytes at addr that covers whole
// huge pages (hugePageBytes-aligned at both ends); lo ≥ hi when there is
// none.
func hugeRange(addr, n uintptr) (lo, hi uintptr) {
	lo = (addr + hugePageBytes - 1) &^ (hugePageBytes - 1)
	hi = (addr + n) &^ (hugePageBytes - 1)
	return lo, hi
}
