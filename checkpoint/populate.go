package checkpoint

import (
	"sync/atomic"
	"unsafe"
)

// Populating the fresh tensors' pages ahead of the conversion. A load
// converts into float32 tensors just allocated (fresh pages of the
// system's, untouched until written), and the kernel faults each 4 KiB page
// in on the conversion's first store to it: about a million faults for the
// 4.3 GB of a TP-1 rank of the Llama-shaped file measured, as much system
// CPU as the read takes (docs/measurements/speed.md, sections 35–37). Where
// the system can (Linux 5.14 and later: madvise MADV_POPULATE_WRITE),
// runReads has one more goroutine fault every whole page of the reads'
// destinations in, writable, read by read in the order the readers take
// them, from the moment the reads are issued: the pages are made while the
// first reads are still at the disk, and the converters' stores find them
// present. The advice writes no value (the page is faulted in as a write
// would fault it, the write itself is not done; a page already present is
// left as it is), so it may meet a converter on the same page in any order
// and the values are the same.

// populateWrite faults in the pages of b (page-aligned at both ends)
// writable, or returns why it could not (populateRefused tells a system
// that has no such advice from one that failed): madvise MADV_POPULATE_WRITE
// on Linux, nil elsewhere (nothing populated). Replaced only by the tests.
var populateWrite = populateWriteSystem

// pageResident reports whether the page b (one page, page-aligned) is in
// memory already: mincore on Linux, false elsewhere. A destination whose
// first page is present is memory the heap had used before (a process's
// second load reuses the first's): its pages are most likely all present,
// and advising them would walk present pages for nothing (0.16–0.32 µs a
// page, docs/measurements/speed.md, section 37), so it is left to the
// converters. Replaced only by the tests.
var pageResident = pageResidentSystem

// populateBytes counts the bytes populateWrite populated, and
// populateFailures the calls that failed otherwise than refused (advice
// only: the load goes on, the converters fault those pages in themselves).
// Tests and benchmarks read them.
var populateBytes, populateFailures atomic.Int64

// wholePages is the byte range [lo, hi) of the whole pages of size page (a
// power of two) inside the n bytes at address addr, as offsets from addr:
// lo is the distance to the first page boundary at or after addr, hi the
// distance to the last at or before addr+n. Where no whole page lies
// inside, lo == hi.
func wholePages(addr, n, page uintptr) (lo, hi uintptr) {
	first := (addr + page - 1) &^ (page - 1)
	last := (addr + n) &^ (page - 1)
	if last <= first {
		return 0, 0
	}
	return first - addr, last - addr
}

// pagesOf is the whole pages of the memory of v, as bytes (nil where v has
// no whole page).
func pagesOf(v []float32, page uintptr) []byte {
	if len(v) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(v))
	lo, hi := wholePages(uintptr(p), uintptr(len(v))*4, page)
	if lo == hi {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, lo)), hi-lo)
}

// destinations is, for each read, the float32 its segments convert into
// (slices of the Slices' Dst; a placed slice's wider tensor is not among
// them). A read's destination is its part of one tensor (a read of up to
// parallelMinBytes of source holds one segment of a large tensor), or the
// whole of several small ones.
func destinations(reads []fileRead) [][][]float32 {
	out := make([][][]float32, len(reads))
	for i, r := range reads {
		for _, g := range r.segs {
			if g.to.place == nil && len(g.to.dst) > 0 {
				out[i] = append(out[i], g.to.dst)
			}
		}
	}
	return out
}

// populate faults in the whole pages of every read's destinations, read by
// read in order, skipping a read whose conversion has begun (converting[i]:
// its converter takes the faults itself) and a destination whose first
// page is present (pageResident), and stopping once stop is set or
// the system refuses the advice (then nothing more is asked of it in this
// call). Other failures are counted (populateFailures) and the next range
// is tried.
func populate(dests [][][]float32, converting []atomic.Bool, stop *atomic.Bool, page uintptr) {
	for i, ds := range dests {
		for _, d := range ds {
			if stop.Load() || converting[i].Load() {
				break
			}
			b := pagesOf(d, page)
			if b == nil || pageResident(b[:page]) {
				continue
			}
			if err := populateWrite(b); err != nil {
				if populateRefused(err) {
					return
				}
				populateFailures.Add(1)
				continue
			}
			populateBytes.Add(int64(len(b)))
		}
	}
}
