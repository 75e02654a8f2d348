package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ringTensors are tensors of every float type with odd sizes, so that
// tensors after the first start off any 4-byte boundary and off every
// page: 7 × 100,003 BF16 (1,400,042 bytes: the next tensor starts 2 bytes
// past a multiple of 8), 3 × 5 F16 (30 bytes), 1,200 × 1,024 F32 (4.9 MB,
// more than one 4 MiB read), 333 × 3,001 F16 (1,998,666 bytes), 1 × 1 BF16.
func ringTensors() []rawTensorData {
	return []rawTensorData{
		patternTensor(BF16, 7, 100003), patternTensor(F16, 3, 5), patternTensor(F32, 1200, 1024),
		patternTensor(F16, 333, 3001), patternTensor(BF16, 1, 1),
	}
}

// fakeDirect makes f's reads go the direct way (readAtDirect's pread
// through f.direct, counted in directReads) through an ordinary second
// descriptor of the file, with read (nil: (*os.File).ReadAt) as the pread;
// both are undone when the test ends.
func fakeDirect(t *testing.T, f *File, path string, read func(*os.File, []byte, int64) (int, error)) {
	t.Helper()
	d, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f.direct = d
	old := preadDirect
	if read != nil {
		preadDirect = read
	}
	t.Cleanup(func() {
		preadDirect = old
		f.direct = nil
		d.Close()
	})
}

// wholeAndCols is, for every tensor of ts, the Slice of its rows [1, n-1)
// (the whole of a one-row tensor) and of its columns [1, m-1) where it has
// more than two, with buffers of their sizes.
func wholeAndCols(t *testing.T, f *File, ts []rawTensorData) []Slice {
	t.Helper()
	var sl []Slice
	for _, raw := range ts {
		x, ok := f.Tensor(raw.name)
		if !ok {
			t.Fatalf("no tensor %s", raw.name)
		}
		r0, r1 := int64(1), raw.shape[0]-1
		if raw.shape[0] < 3 {
			r0, r1 = 0, raw.shape[0]
		}
		s, err := x.RowsSlice(r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		sl = append(sl, s)
		if raw.shape[1] > 2 {
			c, err := x.ColsSlice(1, raw.shape[1]-1)
			if err != nil {
				t.Fatal(err)
			}
			sl = append(sl, c)
		}
	}
	return sl
}

// checkSlices compares every value of the slices of wholeAndCols against
// the reference conversion of its element, one at a time.
func checkSlices(t *testing.T, what string, sl []Slice, ts []rawTensorData) {
	t.Helper()
	byName := map[string]rawTensorData{}
	for _, raw := range ts {
		byName[raw.name] = raw
	}
	for _, s := range sl {
		raw := byName[s.Tensor.Info.Name]
		cols := raw.shape[1]
		w := cols
		if s.Cols {
			w = s.Hi - s.Lo
		}
		for k, got := range s.Dst {
			r, c := int64(k)/w, int64(k)%w
			if s.Cols {
				c += s.Lo
			} else {
				r += s.Lo
			}
			if want := raw.want(r*cols + c); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%s: %s cols %v [%d, %d): [%d][%d] = %g, want %g", what, raw.name, s.Cols, s.Lo, s.Hi, r, c, got, want)
			}
		}
	}
}

// Through the ring of read buffers, every value of every tensor, of every
// float type, at odd sizes and file offsets, read whole (less a row at
// each end) and by columns, equals the reference conversion, with one to
// eight readers, GOMAXPROCS 1, 2 or 4 converters and reads of 4 KiB to
// 4 MiB: reads of 4 KiB and 64 KiB make about 2,000 and 130 reads of the
// 8.3 MB of tensors, many times the ring's 1 + 2·1 to 8 + 2·4 buffers, so
// every buffer is filled and converted again many times (a buffer handed
// back while still converted, or converted twice, shows as wrong values);
// 1 MiB and 4 MiB reads split the large tensors across reads and the
// conversion's yields (convertChunkBytes) fall inside a segment. Each plan
// both through the page cache and the direct way (counted: the path is
// taken).
func TestRingReadsMatchReference(t *testing.T) {
	ts := ringTensors()
	f, path := openWrittenPread(t, ts)
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	for _, c := range []struct {
		procs, readers int
		maxRead        int64
	}{
		{1, 1, 64 << 10}, {1, 8, 4 << 10}, {2, 1, 4 << 10}, {2, 2, 64 << 10},
		{2, 8, 1 << 20}, {2, 8, 4 << 20}, {4, 2, 4 << 20}, {4, 8, 64 << 10},
	} {
		runtime.GOMAXPROCS(c.procs)
		for _, direct := range []bool{false, true} {
			what := fmt.Sprintf("GOMAXPROCS %d, %d readers, reads of %d B, direct %v", c.procs, c.readers, c.maxRead, direct)
			if direct {
				fakeDirect(t, f, path, nil)
			}
			before := directReads.Load()
			sl := wholeAndCols(t, f, ts)
			if err := readSlices(sl, ioPlan{gap: coalesceGapBytes, maxRead: c.maxRead, inFlight: c.readers}); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			checkSlices(t, what, sl, ts)
			if n := directReads.Load() - before; direct != (n > 0) {
				t.Errorf("%s: %d reads counted as direct", what, n)
			}
			f.direct = nil
		}
	}
}

// A reader issues the next reads while a converter is still converting:
// the first conversion to yield is held there until two more reads have
// been issued, with one reader and two converters (the other converter
// goes on, its yields returning at once). At the hold at most the ring's
// 1 + 2·2 buffers have been read, of 32. A loader whose goroutines read
// and then convert in turn issues no read while its one goroutine
// converts, and fails this (after 10 s).
func TestReadsGoOnWhileConverting(t *testing.T) {
	raw := patternTensor(BF16, 1, 16<<20) // 32 MiB: 32 reads of 1 MiB, four yields each
	f, path := openWrittenPread(t, []rawTensorData{raw})
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	var issued atomic.Int64
	fakeDirect(t, f, path, func(d *os.File, b []byte, off int64) (int, error) {
		issued.Add(1)
		return d.ReadAt(b, off)
	})
	var held, first atomic.Bool
	oldYield := convertYield
	defer func() { convertYield = oldYield }()
	convertYield = func() {
		if !first.CompareAndSwap(false, true) {
			return
		}
		at := issued.Load()
		held.Store(awaitCount(issued.Load, at+2))
	}
	s := readFirstRow(t, f, raw)
	if !held.Load() {
		t.Fatalf("fewer than two reads issued in 10 s while a conversion was held (%d issued in all)", issued.Load())
	}
	checkSlices(t, "held conversion", []Slice{s}, []rawTensorData{raw})
}

// awaitCount waits up to 10 s for count to reach want (a held conversion,
// yield or populating waiting for the work that must go on beside it) and
// reports whether it did.
func awaitCount(count func() int64, want int64) bool {
	deadline := time.Now().Add(10 * time.Second)
	for count() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return count() >= want
}

// readFirstRow reads raw's first row from f with one reader in reads of
// 1 MiB (the load of the tests that hold a conversion, a yield or the
// populating) and returns the slice.
func readFirstRow(t *testing.T, f *File, raw rawTensorData) Slice {
	t.Helper()
	x, _ := f.Tensor(raw.name)
	s, err := x.RowsSlice(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := readSlices([]Slice{s}, ioPlan{gap: coalesceGapBytes, maxRead: 1 << 20, inFlight: 1}); err != nil {
		t.Fatal(err)
	}
	return s
}

// settledGoroutines waits up to 2 s for the number of goroutines to come
// back to want (a goroutine that has signalled its WaitGroup may not have
// exited yet) and fails with their stacks if it does not.
func settledGoroutines(t *testing.T, what string, want int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > want {
		buf := make([]byte, 1<<20)
		t.Fatalf("%s: %d goroutines left running, %d before:\n%s", what, n, want, buf[:runtime.Stack(buf, true)])
	}
}

// A direct read that fails in the middle of the stream (the 20th of 130
// reads: EIO, or a read that comes back short without an error) is
// returned naming the file and wrapping the cause, with every reader,
// converter and the advising goroutine ended; the next ReadSlices of the
// same file, the reads succeeding, gives the reference values.
func TestReadErrorMidStream(t *testing.T) {
	ts := ringTensors()
	f, path := openWrittenPread(t, ts)
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	for _, c := range []struct {
		name string
		fail func(b []byte) (int, error)
		want error
	}{
		{"eio", func([]byte) (int, error) { return 0, &os.PathError{Op: "read", Path: path, Err: syscall.EIO} }, syscall.EIO},
		{"short", func(b []byte) (int, error) { return len(b) / 3, nil }, io.ErrUnexpectedEOF},
	} {
		for _, ahead := range []int64{0, 256 << 10} {
			what := fmt.Sprintf("%s, advised %d B ahead", c.name, ahead)
			var calls atomic.Int64
			fakeDirect(t, f, path, func(d *os.File, b []byte, off int64) (int, error) {
				if calls.Add(1) == 20 {
					return c.fail(b)
				}
				return d.ReadAt(b, off)
			})
			g0 := runtime.NumGoroutine()
			sl := wholeAndCols(t, f, ts)
			err := readSlices(sl, ioPlan{gap: coalesceGapBytes, maxRead: 64 << 10, inFlight: 8, ahead: ahead})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: error %v, want %v naming %s", what, err, c.want, path)
			}
			if calls.Load() < 20 {
				t.Errorf("%s: %d reads, the failing one not reached", what, calls.Load())
			}
			settledGoroutines(t, what, g0)
			f.direct = nil
		}
	}
	fakeDirect(t, f, path, nil)
	sl := wholeAndCols(t, f, ts)
	if err := readSlices(sl, ioPlan{gap: coalesceGapBytes, maxRead: 64 << 10, inFlight: 8}); err != nil {
		t.Fatal(err)
	}
	checkSlices(t, "after the failed reads", sl, ts)
}

// Where the kernel refuses some direct reads and not others (EINVAL on
// every third), the refused ones go through the page cache and every value
// equals the reference conversion; exactly the others are counted as
// direct.
func TestDirectRefusedSomeReads(t *testing.T) {
	ts := ringTensors()
	f, path := openWrittenPread(t, ts)
	var calls, refused atomic.Int64
	fakeDirect(t, f, path, func(d *os.File, b []byte, off int64) (int, error) {
		if calls.Add(1)%3 == 0 {
			refused.Add(1)
			return 0, &os.PathError{Op: "read", Path: path, Err: syscall.EINVAL}
		}
		return d.ReadAt(b, off)
	})
	before := directReads.Load()
	sl := wholeAndCols(t, f, ts)
	if err := readSlices(sl, ioPlan{gap: coalesceGapBytes, maxRead: 64 << 10, inFlight: 8}); err != nil {
		t.Fatal(err)
	}
	checkSlices(t, "every third direct read refused", sl, ts)
	if refused.Load() == 0 {
		t.Fatal("no direct read refused: the fallback was not exercised")
	}
	if got, want := directReads.Load()-before, calls.Load()-refused.Load(); got != want {
		t.Errorf("%d reads counted as direct, want %d (%d tried, %d refused)", got, want, calls.Load(), refused.Load())
	}
}

// The ring holds a buffer per reader and two per converter, but never more
// than there are reads: three reads of 4 MiB with eight readers and two
// converters take 3 scratch buffers (12 MiB), not 8 + 2·2 = 12 (48 MiB).
func TestRingBuffers(t *testing.T) {
	for _, c := range []struct{ readers, converters, n, want int }{
		{8, 2, 130, 12}, // 8 + 2·2 = 12 ≤ 130 reads
		{1, 2, 32, 5},   // 1 + 2·2 = 5 ≤ 32
		{3, 2, 3, 3},    // 3 + 2·2 = 7, capped at the 3 reads
		{2, 2, 2, 2},    // two reads: a buffer each
		{1, 1, 0, 1},    // no read (runReads never asks): still one buffer, never zero
	} {
		if got := ringBuffers(c.readers, c.converters, c.n); got != c.want {
			t.Errorf("ringBuffers(%d readers, %d converters, %d reads) = %d, want %d", c.readers, c.converters, c.n, got, c.want)
		}
	}
}
