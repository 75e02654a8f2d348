package checkpoint

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Slice is one part of a tensor a reader wants: rows [Lo, Hi) of it
// (elements of a vector), or, with Cols, its columns [Lo, Hi) of every row,
// converted to float32 into Dst, which holds exactly the slice's values,
// row-major (Tensor.ReadRows and Tensor.ReadCols read one such slice), or,
// with Place (Dst nil), written where the Placement says as they are
// converted (transposed, or beside other slices in a wider tensor).
type Slice struct {
	Tensor Tensor
	Cols   bool
	Lo, Hi int64
	Dst    []float32
	Place  *Placement
}

// ReadSlices reads a whole list of slices, of any tensors of any files, at
// once: the file ranges they need are sorted by offset, ranges separated by
// less than coalesceGapBytes are read as one (reading a small gap costs less
// than another request), and the reads, page-aligned and up to
// parallelMinBytes each, are issued front to back by several goroutines, so
// that several are in flight across tensors while others convert what has
// arrived. A read's pages are those of the slices and of the small gaps only:
// the kernel's readahead is off on the descriptor (adviseExplicit).
//
// Each slice is checked as ReadRows / ReadCols check theirs before anything
// is read; the first error is returned, naming the tensor and its file.
func ReadSlices(s []Slice) error { return readSlices(s, defaultPlan()) }

// defaultPlan is how ReadSlices, ReadRows, ReadCols and Float32 group and
// issue their reads.
func defaultPlan() ioPlan {
	return ioPlan{gap: coalesceGapBytes, maxRead: parallelMinBytes, inFlight: ReadsInFlight()}
}

// readAheadBytes is the window ioPlan.ahead was measured with: advising the
// reads 64 MiB (sixteen 4 MiB reads) ahead of the readers. It is off by
// default: on the disk measured it was 45 % faster for a TP-8 rank of a
// Llama-7B-shaped file in one run and 14 % slower in the next, and the
// other layouts and degrees split the same way
// (docs/measurements/speed.md, section 8).
const readAheadBytes = 64 << 20

// coalesceGapBytes is the largest gap between two needed ranges that is
// read through rather than skipped with a second request: 64 KiB at about
// 1 GB/s is 64 µs of transfer, about what a separate request costs on the
// virtual disks measured (docs/measurements/speed.md, section 8).
const coalesceGapBytes = 64 << 10

// ReadsInFlight is how many reads ReadSlices keeps in flight: at least 8
// (a disk's queue wants several requests even on a 2-core machine, and a
// goroutine blocked in pread holds no core), more where there are more cores
// to convert. The cold-load benchmarks give their direct sequential read of
// a file the same depth, so that a load is held against a read as deep.
func ReadsInFlight() int { return max(8, runtime.GOMAXPROCS(0)) }

// ioPlan is how ReadSlices groups and issues its reads.
type ioPlan struct {
	gap      int64 // ranges at most this far apart are read as one
	maxRead  int64 // bytes per read (a single run longer than this is split)
	inFlight int   // goroutines reading
	ahead    int64 // bytes of reads advised to the kernel ahead of the readers (0: none)
}

// segment is count runs of run bytes, stride bytes apart, starting at file
// offset off, converted to dst (count·run/size values) in order, or, with
// place, to the slice's values [at, at+count·run/size) in row-major order
// (rows of width values) placed by it.
type segment struct {
	fd, direct              *os.File
	size                    int64 // the file's size
	off, run, stride, count int64
	dtype                   DType
	to                      target
}

// target is where converted values go: dst, row-major, or, with place, the
// values of a placed slice from its value at on (rows of width values).
type target struct {
	dst       []float32
	place     *Placement
	at, width int64
}

// sub is the target of values [e, e+n) of t.
func (t target) sub(e, n int64) target {
	if t.place != nil {
		t.at += e
		return t
	}
	t.dst = t.dst[e : e+n]
	return t
}

// target is where x's values go; width is the values in each of its rows.
func (x *Slice) target(width int64) target {
	if x.Place != nil {
		return target{place: x.Place, width: width}
	}
	return target{dst: x.Dst}
}

func (g segment) end() int64 { return g.off + (g.count-1)*g.stride + g.run }

// fileRead is one pread of [lo, hi) of fd serving segs (a range of the
// sorted segments).
type fileRead struct {
	fd     *os.File
	direct *os.File // fd opened for direct I/O, or nil
	lo, hi int64
	segs   []segment
}

func readSlices(s []Slice, p ioPlan) error {
	segs, err := sliceSegments(s, p)
	if err != nil {
		return err
	}
	return readSegments(segs, p)
}

// sliceSegments checks every slice, converts those of tensors in memory
// already, and returns the segments of the others to read.
func sliceSegments(s []Slice, p ioPlan) ([]segment, error) {
	for i := range s { // every slice checked before anything is read
		if err := s[i].check(); err != nil {
			return nil, err
		}
	}
	var segs []segment
	for i := range s {
		x := &s[i]
		t := x.Tensor
		switch {
		case t.fd == nil && x.Place != nil:
			if err := x.readPlacedMem(); err != nil {
				return nil, err
			}
		case t.fd == nil: // in memory already: nothing to plan
			if err := x.read(); err != nil {
				return nil, err
			}
		case x.Cols:
			segs = t.colSegments(segs, x.Lo, x.Hi, x.target(x.Hi-x.Lo), p)
		default:
			_, cols, _ := t.dims2("Rows") // checked by check
			segs = t.rangeSegments(segs, x.Lo*cols, (x.Hi-x.Lo)*cols, x.target(cols), p)
		}
	}
	return segs, nil
}

// read converts the slice alone, with ReadRows or ReadCols.
func (x *Slice) read() error {
	if x.Cols {
		return x.Tensor.ReadCols(x.Dst, x.Lo, x.Hi)
	}
	return x.Tensor.ReadRows(x.Dst, x.Lo, x.Hi)
}

// readSegments reads and converts segs, sorted by file (in the order first
// met) and offset: one pass front to back through each file.
func readSegments(segs []segment, p ioPlan) error {
	if len(segs) == 0 {
		return nil
	}
	return runReads(planSegments(segs, p), p)
}

// planSegments sorts segs (at least one) by file, in the order first met,
// and offset, and groups them into reads (planReads).
func planSegments(segs []segment, p ioPlan) []fileRead {
	order := map[*os.File]int{}
	for _, g := range segs {
		if _, ok := order[g.fd]; !ok {
			order[g.fd] = len(order)
		}
	}
	slices.SortStableFunc(segs, func(a, b segment) int {
		if c := cmp.Compare(order[a.fd], order[b.fd]); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	return planReads(segs, p)
}

// check validates the slice as ReadRows / ReadCols do.
func (x *Slice) check() error {
	t := x.Tensor
	var n int64
	var err error
	what := "rows"
	if x.Cols {
		what = "columns"
		n, err = t.colsLen(x.Lo, x.Hi)
	} else {
		n, err = t.rowsLen(x.Lo, x.Hi)
	}
	if err != nil {
		return err
	}
	if x.Place != nil {
		if x.Dst != nil {
			return t.errorf("%s [%d, %d): a placed slice has no Dst of its own (it holds %d values)", what, x.Lo, x.Hi, len(x.Dst))
		}
		rows, width := x.Hi-x.Lo, n/max(x.Hi-x.Lo, 1)
		if x.Cols {
			rows, width = t.Info.Shape[0], x.Hi-x.Lo
		}
		return x.Place.check(t, rows, width)
	}
	if int64(len(x.Dst)) != n {
		return t.errorf("%s [%d, %d) are %d values, the buffer holds %d", what, x.Lo, x.Hi, n, len(x.Dst))
	}
	return nil
}

// rangeSegments appends the segments of the tensor's elements [e0,
// e0+n), one contiguous range of the file, going to to, in pieces of at
// most p.maxRead bytes.
func (t Tensor) rangeSegments(out []segment, e0, n int64, to target, p ioPlan) []segment {
	es := t.Info.DType.Size()
	per := max(1, p.maxRead/es) // elements per piece
	for e := int64(0); e < n; e += per {
		k := min(per, n-e)
		out = append(out, segment{fd: t.fd, direct: t.direct, size: int64(len(t.mapping)), dtype: t.Info.DType,
			off: t.off + (e0+e)*es, run: k * es, count: 1, to: to.sub(e, k)})
	}
	return out
}

// colSegments appends the segments of columns [c0, c1) of every row of a
// 2-D tensor: one strided segment per group of rows where the gap between
// a row's run and the next is at most p.gap (the group's span, gaps
// included, is one read), else the rows' runs apart (only their pages are
// read).
func (t Tensor) colSegments(out []segment, c0, c1 int64, to target, p ioPlan) []segment {
	rows, cols := t.Info.Shape[0], t.Info.Shape[1]
	es, w := t.Info.DType.Size(), c1-c0
	if w == 0 || rows == 0 {
		return out
	}
	run, stride := w*es, cols*es
	if stride-run > p.gap || run > p.maxRead {
		for r := int64(0); r < rows; r++ {
			out = t.rangeSegments(out, r*cols+c0, w, to.sub(r*w, w), p)
		}
		return out
	}
	per := max(1, (p.maxRead-run)/stride+1) // rows whose span fits one read
	for r := int64(0); r < rows; r += per {
		k := min(per, rows-r)
		out = append(out, segment{fd: t.fd, direct: t.direct, size: int64(len(t.mapping)), dtype: t.Info.DType,
			off: t.off + (r*cols+c0)*es, run: run, stride: stride, count: k, to: to.sub(r*w, k*w)})
	}
	return out
}

// planReads groups sorted segments into reads: a segment joins the read
// before it when it starts at most gap bytes past the read's end, in the
// same file, and the read stays within maxRead bytes (pages included). Reads
// are widened to whole pages: the kernel reads those anyway.
func planReads(segs []segment, p ioPlan) []fileRead {
	page := int64(os.Getpagesize())
	down := func(v int64) int64 { return v &^ (page - 1) }
	up := func(v, size int64) int64 { return min(size, (v+page-1)&^(page-1)) }
	var reads []fileRead
	start := 0
	lo, hi := down(segs[0].off), segs[0].end()
	flush := func(i int) {
		reads = append(reads, fileRead{fd: segs[start].fd, direct: segs[start].direct, lo: lo, hi: up(hi, segs[start].size), segs: segs[start:i]})
	}
	for i := 1; i < len(segs); i++ {
		g := segs[i]
		if g.fd == segs[start].fd && g.off-hi <= p.gap && up(max(hi, g.end()), g.size)-lo <= p.maxRead+page {
			hi = max(hi, g.end())
			continue
		}
		flush(i)
		start, lo, hi = i, down(g.off), g.end()
	}
	flush(len(segs))
	return reads
}

// runReads reads and converts the reads, split between two kinds of
// goroutine that meet at a ring of buffers (ringBuffers): p.inFlight
// readers take the reads in order, each with a free buffer of the ring,
// issue the pread and hand the filled buffer on; GOMAXPROCS converters
// convert each filled buffer's segments into their tensors (taking the
// page faults of the fresh tensors as they write them) and give the buffer
// back. A reader issues its next read as soon as a buffer is free,
// whatever the converters are doing, so the disk's queue stays full while
// the CPU converts what came before (a goroutine that read and then
// converted would wait for a core with its next read not yet issued); the
// converters yield between pieces of about convertChunkBytes
// (convertYield), so a reader back from the disk gets a core within about
// that much conversion. The first read error stops the hand-out (what was
// read and not yet converted is dropped) and is returned after every
// goroutine has ended. With p.ahead, one more goroutine asks the kernel to
// start reading (adviseWillNeed) the reads up to p.ahead bytes past the
// ones being read. One more goroutine, started before the readers,
// populates the reads' destination pages in the order of the reads
// (populate): the fresh tensors' page faults are taken while the first
// reads are at the disk, not on the converters' stores; a read whose
// conversion has begun is skipped, and so is memory the heap reused
// (its first page present: pageResident).
func runReads(reads []fileRead, p ioPlan) error {
	if len(reads) == 1 { // one read: no goroutine to start
		buf := getScratch()
		defer scratchPool.Put(buf)
		b, err := reads[0].read(buf)
		if err != nil {
			return err
		}
		reads[0].convert(b, nil)
		return nil
	}
	readers := min(max(p.inFlight, 1), len(reads))
	converters := min(runtime.GOMAXPROCS(0), len(reads))
	ring := ringBuffers(readers, converters, len(reads))
	var next atomic.Int64
	var stopped atomic.Bool
	var once sync.Once
	var first error
	var popStop atomic.Bool // an error, or every conversion done: populating is over
	fail := func(err error) {
		once.Do(func() { first = err })
		stopped.Store(true)
		popStop.Store(true)
		next.Store(int64(len(reads)))
	}
	converting := make([]atomic.Bool, len(reads)) // set as a read's conversion begins
	populated := make(chan struct{})
	go func() {
		defer close(populated)
		populate(destinations(reads), converting, &popStop, uintptr(os.Getpagesize()))
	}()
	var advised chan struct{} // a token per read advised and not yet taken
	done, prefetched := make(chan struct{}), make(chan struct{})
	if window := p.ahead / max(p.maxRead, 1); window > 0 {
		advised = make(chan struct{}, window)
		go func() {
			defer close(prefetched)
			for i := range reads {
				select {
				case advised <- struct{}{}:
				case <-done:
					return
				}
				if r := reads[i]; int64(i) >= next.Load() { // not taken yet
					adviseWillNeed(r.fd, r.lo, r.hi-r.lo)
				}
			}
		}()
	} else {
		close(prefetched)
	}
	type filledBuf struct {
		i   int64
		buf *[]byte
		b   []byte // the read's bytes, in buf
	}
	free := make(chan *[]byte, ring)
	for range ring {
		free <- getScratch()
	}
	filled := make(chan filledBuf, ring) // never full: at most ring buffers exist
	var rwg, cwg sync.WaitGroup
	for range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				buf := <-free // the converters give every buffer back, even after an error
				i := next.Add(1) - 1
				if i >= int64(len(reads)) {
					free <- buf
					return
				}
				select { // the prefetcher may advise one more
				case <-advised:
				default:
				}
				b, err := reads[i].read(buf)
				if err != nil {
					free <- buf
					fail(err)
					return
				}
				filled <- filledBuf{i, buf, b}
			}
		}()
	}
	for range converters {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for f := range filled {
				converting[f.i].Store(true)
				if !stopped.Load() {
					reads[f.i].convert(f.b, convertYield)
				}
				free <- f.buf
			}
		}()
	}
	rwg.Wait()
	close(filled)
	cwg.Wait()
	popStop.Store(true)
	close(done)
	<-prefetched
	<-populated
	for range ring {
		scratchPool.Put(<-free)
	}
	return first
}

// ringBuffers is how many buffers runReads's ring holds for readers
// readers and converters converters over n reads: one per reader and two
// per converter (the one it converts and one filled, waiting for it), so
// that the readers find free buffers while every converter is busy — but
// no more than n, one per read, as many as the reads can ever fill (each
// buffer is a scratch buffer of up to parallelMinBytes taken for the call).
func ringBuffers(readers, converters, n int) int {
	return max(1, min(readers+2*converters, n))
}

// convertChunkBytes is about how much source a converter converts between
// two yields (convertYield): at the 0.5–1 GB/s a core converts into fresh
// memory (its page faults included) about a third of a millisecond, a
// small part of a 4 MiB read's 3 ms at the 1.3 GB/s of the disk measured
// (docs/measurements/speed.md, section 36).
const convertChunkBytes = 256 << 10

// convertYield lets a reader back from the disk have the core (converters
// run without blocking while buffers are filled, and a goroutine back from
// a system call waits for a core like any other): runtime.Gosched, replaced
// only by the tests that hold a conversion to see the reads go on.
var convertYield = runtime.Gosched

// read reads r's bytes into scratch and returns them.
func (r fileRead) read(scratch *[]byte) ([]byte, error) {
	b, err := readAtDirect(r.direct, r.fd, scratch, r.lo, r.hi-r.lo)
	if err != nil {
		return nil, fmt.Errorf("reading bytes [%d, %d): %w", r.lo, r.hi, err) // err names the file
	}
	return b, nil
}

// convert converts the segments of r from b, its bytes, calling yield
// (where set) after about every convertChunkBytes of source.
func (r fileRead) convert(b []byte, yield func()) {
	var since int64 // source bytes converted since the last yield
	step := func(n int64) {
		if since += n; yield != nil && since >= convertChunkBytes {
			yield()
			since = 0
		}
	}
	for _, g := range r.segs {
		es := g.dtype.Size()
		per := g.run / es
		o := g.off - r.lo
		switch {
		case g.to.place != nil && g.count == 1:
			g.to.place.putRange(b[o:o+g.run], g.to.at, per, g.to.width, g.dtype)
			step(g.run)
		case g.to.place != nil: // whole rows of the slice, stride apart
			g.to.place.putBlock(b[o:o+(g.count-1)*g.stride+g.run], g.stride, g.to.at/g.to.width, g.count, 0, per, g.dtype)
			step(g.count * g.run)
		default:
			chunk := max(1, convertChunkBytes/es) // values between yields
			for k := int64(0); k < g.count; k++ {
				o := g.off + k*g.stride - r.lo
				dst := g.to.dst[k*per : (k+1)*per]
				for v := int64(0); v < per; v += chunk {
					n := min(chunk, per-v)
					decode(dst[v:v+n], b[o+v*es:o+(v+n)*es], g.dtype)
					step(n * es)
				}
			}
		}
	}
}

// RowsSlice is the Slice of rows [r0, r1) of t with a buffer of its size,
// checked as Rows checks (for ReadSlices).
func (t Tensor) RowsSlice(r0, r1 int64) (Slice, error) {
	n, err := t.rowsLen(r0, r1)
	if err != nil {
		return Slice{}, err
	}
	return Slice{Tensor: t, Lo: r0, Hi: r1, Dst: make([]float32, n)}, nil
}

// ColsSlice is the Slice of columns [c0, c1) of t with a buffer of its
// size, checked as Cols checks (for ReadSlices).
func (t Tensor) ColsSlice(c0, c1 int64) (Slice, error) {
	n, err := t.colsLen(c0, c1)
	if err != nil {
		return Slice{}, err
	}
	return Slice{Tensor: t, Cols: true, Lo: c0, Hi: c1, Dst: make([]float32, n)}, nil
}
