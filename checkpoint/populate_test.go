package checkpoint

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The whole pages inside a span, hand-derived with 4 KiB pages (0x1000):
// [0x1001, 0x4001) holds the pages at 0x2000 and 0x3000, offsets 0xfff to
// 0x2fff from its start; a span that is exactly pages is all of them; a
// span shorter than a page, or one page long but off the boundary, or
// empty, holds none.
func TestWholePages(t *testing.T) {
	const page = 0x1000
	for _, c := range []struct {
		addr, n, lo, hi uintptr
	}{
		{0x1001, 0x3000, 0xfff, 0x2fff},      // unaligned both ends: pages 0x2000, 0x3000
		{0x10000, 0x3000, 0, 0x3000},         // exactly three pages
		{0x10000, 0x3001, 0, 0x3000},         // aligned start, a byte past the third page
		{0x10004, 0x2ffc, 0xffc, 0x2ffc},     // unaligned start, ends on a boundary (0x13000): pages 0x11000, 0x12000
		{0x10000, 0xfff, 0, 0},               // a byte short of a page
		{0x10010, 100, 0, 0},                 // inside one page
		{0x10ff0, 0x20, 0, 0},                // across a boundary, no whole page
		{0x10001, 0x1000, 0, 0},              // a page long, off the boundary
		{0x10000, 0, 0, 0},                   // empty, on a boundary
		{0x10001, 0, 0, 0},                   // empty, off one
		{0xfff, 0x2002, 1, 0x2001},           // a byte before 0x1000 to a byte past 0x3000: pages 0x1000, 0x2000
		{0x7fff_f000, 0x1000, 0, 0x1000},     // one page, high address
		{0x7fff_efff, 0x1002, 1, 0x1001},     // that page with a byte either side
		{0x12345678, 0x10000, 0x988, 0xf988}, // 0x12346000 to 0x12355000 (end 0x12355678): 15 pages
	} {
		lo, hi := wholePages(c.addr, c.n, page)
		if lo != c.lo || hi != c.hi {
			t.Errorf("wholePages(%#x, %#x) = [%#x, %#x), want [%#x, %#x)", c.addr, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

// alignedFloats is n float32 starting skip bytes (a multiple of 4) past a
// 4 KiB boundary, inside a larger allocation, and that boundary's address.
func alignedFloats(n, skip int) ([]float32, uintptr) {
	const page = 4096
	buf := make([]float32, n+page/4+skip/4)
	a := uintptr(unsafe.Pointer(&buf[0]))
	first := int(((a+page-1)&^(page-1) - a) / 4) // index of the first element on a boundary
	return buf[first+skip/4 : first+skip/4+n], (a + page - 1) &^ (page - 1)
}

// call is one populateWrite: its range, from base.
type call struct{ off, n uintptr }

// noneResident makes populate take every destination for fresh memory
// (pageResident false), for the test: the tests' buffers are often memory
// the heap has used and zeroed, present already.
func noneResident(t *testing.T) {
	t.Helper()
	old := pageResident
	pageResident = func([]byte) bool { return false }
	t.Cleanup(func() { pageResident = old })
}

// recordPopulate replaces populateWrite, for the test, with one that
// records each range from base and populates nothing.
func recordPopulate(t *testing.T, base uintptr) *[]call {
	t.Helper()
	var calls []call
	old := populateWrite
	populateWrite = func(b []byte) error {
		calls = append(calls, call{uintptr(unsafe.Pointer(&b[0])) - base, uintptr(len(b))})
		return nil
	}
	t.Cleanup(func() { populateWrite = old })
	return &calls
}

// populate advises the whole pages of each read's part of a tensor, read
// by read, and nothing past it. A BF16 tensor of 1 × 3 Mi values read in
// reads of 1 MiB of source is six reads (a second 1 MiB segment would make
// a read of 2 MiB, more than 1 MiB and a page), each converting 512 Ki
// values into 2 MiB of float32; the 3 × 5 F16 tensor, right after it in
// the file, is read with the last of them. With the values starting on a page: six
// calls of 2 MiB, at 0, 2, … 10 MiB, every page. With them 4 bytes past
// one: each read's 2 MiB from 4 + j·2 MiB holds the 511 pages from
// j·2 MiB + 4 KiB (the page at j·2 MiB straddles two reads and is left to
// the converters), and the 3 × 5 F16 tensor's 60 bytes of float32 hold no
// page. A read whose conversion has begun is skipped; once stopped,
// nothing is advised.
func TestPopulateWholePagesOfEachRead(t *testing.T) {
	const mi = 1 << 20
	big, small := patternTensor(BF16, 1, 3*mi), patternTensor(F16, 3, 5)
	f, _ := openWrittenPread(t, []rawTensorData{big, small})
	p := ioPlan{gap: coalesceGapBytes, maxRead: 1 * mi, inFlight: 8}
	bx, _ := f.Tensor(big.name)
	sx, _ := f.Tensor(small.name)
	for _, c := range []struct {
		skip       int
		converting []int
		resident   uintptr // a read's part whose first page is present: from the boundary (0: none)
		stop       bool
		offs       []uintptr // the calls' offsets from the boundary
		n          uintptr   // each call's length
	}{
		{0, nil, 0, false, []uintptr{0, 2 * mi, 4 * mi, 6 * mi, 8 * mi, 10 * mi}, 2 * mi},
		{4, nil, 0, false, []uintptr{4096, 2*mi + 4096, 4*mi + 4096, 6*mi + 4096, 8*mi + 4096, 10*mi + 4096}, 511 * 4096},
		{0, []int{0, 3}, 0, false, []uintptr{2 * mi, 4 * mi, 8 * mi, 10 * mi}, 2 * mi},
		{0, nil, 4 * mi, false, []uintptr{0, 2 * mi, 6 * mi, 8 * mi, 10 * mi}, 2 * mi},
		{0, nil, 0, true, nil, 0},
	} {
		what := fmt.Sprintf("%d bytes past a page, reads %v converting, first page at %#x present, stopped %v", c.skip, c.converting, c.resident, c.stop)
		dst, base := alignedFloats(3*mi, c.skip)
		calls := recordPopulate(t, base)
		oldResident := pageResident
		pageResident = func(b []byte) bool {
			if len(b) != 4096 {
				t.Errorf("%s: residency asked of %d bytes, want one page", what, len(b))
			}
			return c.resident != 0 && uintptr(unsafe.Pointer(&b[0]))-base == c.resident
		}
		sl := []Slice{{Tensor: bx, Lo: 0, Hi: 1, Dst: dst}, {Tensor: sx, Lo: 0, Hi: 3, Dst: make([]float32, 15)}}
		segs, err := sliceSegments(sl, p)
		if err != nil {
			t.Fatal(err)
		}
		reads := planSegments(segs, p)
		if len(reads) != 6 || len(reads[5].segs) != 2 { // the F16's 30 bytes, right after the BF16, fit in its last read
			t.Fatalf("%s: %d reads, want 6, the last of both tensors", what, len(reads))
		}
		converting := make([]atomic.Bool, len(reads))
		for _, i := range c.converting {
			converting[i].Store(true)
		}
		var stop atomic.Bool
		stop.Store(c.stop)
		populate(destinations(reads), converting, &stop, 4096)
		var want []call
		for _, o := range c.offs {
			want = append(want, call{o, c.n})
		}
		if !slices.Equal(*calls, want) {
			t.Errorf("%s: calls %v, want %v", what, *calls, want)
		}
		pageResident = oldResident
	}
}

// The system's residency answer: a page just mapped is not present, and
// is once written.
func TestPageResidentSystem(t *testing.T) {
	b, err := syscall.Mmap(-1, 0, 2*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Skipf("no anonymous mmap here: %v", err)
	}
	defer syscall.Munmap(b)
	if runtime.GOOS != "linux" {
		if pageResidentSystem(b[:4096]) {
			t.Error("a page read as present without mincore")
		}
		return
	}
	if pageResidentSystem(b[:4096]) {
		t.Error("a page just mapped reads as present")
	}
	b[4096] = 1 // the second page only
	if pageResidentSystem(b[:4096]) || !pageResidentSystem(b[4096:]) {
		t.Errorf("after writing the second page: first present %v (want false), second %v (want true)", pageResidentSystem(b[:4096]), pageResidentSystem(b[4096:]))
	}
}

// gatePopulate replaces populateWrite, for the test, with a wrapper of
// advise that closes first at its first call, and makes f's reads go the
// direct way through a pread that waits (up to 10 s) for first: the
// populating goroutine has run before any read comes back, so the cases
// below exercise it whatever the scheduler does. It returns the calls
// counter.
func gatePopulate(t *testing.T, f *File, path string, advise func([]byte) error) *atomic.Int64 {
	t.Helper()
	noneResident(t)
	var calls atomic.Int64
	first := make(chan struct{})
	var once sync.Once
	old := populateWrite
	populateWrite = func(b []byte) error {
		calls.Add(1)
		once.Do(func() { close(first) })
		return advise(b)
	}
	t.Cleanup(func() { populateWrite = old })
	fakeDirect(t, f, path, func(d *os.File, b []byte, off int64) (int, error) {
		select {
		case <-first:
		case <-time.After(10 * time.Second):
		}
		return d.ReadAt(b, off)
	})
	return &calls
}

// With the pages populated by the system, refused (EINVAL: a kernel
// before 5.14) or failing otherwise (EFAULT), every value of every tensor
// (ringTensors, read whole and by columns in reads of 64 KiB, eight
// readers, two converters) equals the reference conversion. Refused, the
// advice is asked once and no more in the call, nothing counted; failing,
// every failure is counted and the load goes on; by the system, bytes are
// populated and nothing fails.
func TestPopulateRefusedSameValues(t *testing.T) {
	ts := ringTensors()
	f, path := openWrittenPread(t, ts)
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	system := populateWrite
	probe, _ := alignedFloats(2048, 0) // two pages
	refusedHere := populateRefused(system(pagesOf(probe, 4096)))
	for _, c := range []struct {
		name   string
		advise func([]byte) error
	}{
		{"system", system},
		{"einval", func([]byte) error { return syscall.EINVAL }},
		{"efault", func([]byte) error { return syscall.EFAULT }},
	} {
		calls := gatePopulate(t, f, path, c.advise)
		bytes0, failures0 := populateBytes.Load(), populateFailures.Load()
		sl := wholeAndCols(t, f, ts)
		if err := readSlices(sl, ioPlan{gap: coalesceGapBytes, maxRead: 64 << 10, inFlight: 8}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkSlices(t, c.name, sl, ts)
		n, bytes, failures := calls.Load(), populateBytes.Load()-bytes0, populateFailures.Load()-failures0
		switch {
		case n == 0:
			t.Errorf("%s: populateWrite never called", c.name)
		case c.name == "einval" && (n != 1 || bytes != 0 || failures != 0):
			t.Errorf("%s: %d calls, %d bytes, %d failures counted; want 1 call, nothing counted", c.name, n, bytes, failures)
		case c.name == "efault" && (bytes != 0 || failures != n):
			t.Errorf("%s: %d calls, %d bytes, %d failures counted; want every call a failure", c.name, n, bytes, failures)
		case c.name == "system" && refusedHere:
			t.Logf("this kernel refuses MADV_POPULATE_WRITE: %d calls", n)
		case c.name == "system" && (bytes == 0 || failures != 0 || bytes%4096 != 0):
			t.Errorf("%s: %d calls, %d bytes populated, %d failures; want whole pages populated, no failure", c.name, n, bytes, failures)
		}
		f.direct = nil
	}
}

// The reads go on while the populating goroutine is held: its first call
// (made before any read is issued: the reads wait for it) waits until two
// reads have been issued, with one reader (32 reads of 1 MiB). A loader that populated the tensors before issuing its reads
// would issue none, and fails this (after 10 s).
func TestReadsGoOnWhilePopulating(t *testing.T) {
	raw := patternTensor(BF16, 1, 16<<20) // 32 MiB of source, 64 MiB of float32
	f, path := openWrittenPread(t, []rawTensorData{raw})
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	noneResident(t)
	var issued atomic.Int64
	started := make(chan struct{}) // closed at the first populateWrite
	fakeDirect(t, f, path, func(d *os.File, b []byte, off int64) (int, error) {
		select { // no read is issued before the populating has begun
		case <-started:
		case <-time.After(10 * time.Second):
		}
		issued.Add(1)
		return d.ReadAt(b, off)
	})
	var held, first atomic.Bool
	oldPop := populateWrite
	defer func() { populateWrite = oldPop }()
	populateWrite = func(b []byte) error {
		if first.CompareAndSwap(false, true) {
			close(started)
			held.Store(awaitCount(issued.Load, 2))
		}
		return oldPop(b)
	}
	s := readFirstRow(t, f, raw)
	if !first.Load() {
		t.Fatal("populateWrite never called")
	}
	if !held.Load() {
		t.Fatalf("fewer than two reads issued in 10 s while the populating was held (%d issued in all)", issued.Load())
	}
	checkSlices(t, "held populating", []Slice{s}, []rawTensorData{raw})
}

// The populating goes on ahead of the conversions: with one converter,
// its first conversion held at its first yield until two calls have
// populated pages (one reader, a ring of three buffers: the reads stop
// too), the populating goroutine advises the reads not yet converted. A
// loader that populated each read's pages on the converter, before
// converting it, has made one call (the read held) at most, and fails this
// (after 10 s).
func TestPopulateAheadOfConversion(t *testing.T) {
	raw := patternTensor(BF16, 1, 16<<20)
	f, path := openWrittenPread(t, []rawTensorData{raw})
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	noneResident(t)
	fakeDirect(t, f, path, nil)
	var calls atomic.Int64
	oldPop := populateWrite
	defer func() { populateWrite = oldPop }()
	populateWrite = func(b []byte) error {
		calls.Add(1)
		return oldPop(b)
	}
	var held, first atomic.Bool
	oldYield := convertYield
	defer func() { convertYield = oldYield }()
	convertYield = func() {
		if !first.CompareAndSwap(false, true) {
			return
		}
		held.Store(awaitCount(calls.Load, 2))
	}
	s := readFirstRow(t, f, raw)
	if !held.Load() {
		t.Fatalf("fewer than two populateWrite calls in 10 s while a conversion was held (%d in all)", calls.Load())
	}
	checkSlices(t, "held conversion", []Slice{s}, []rawTensorData{raw})
}
