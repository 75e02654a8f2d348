package checkpoint

import (
	"math"
	"math/rand"
	"os"
	"runtime"
	"strings"
	"testing"
)

// ReadSlices, with every grouping of its reads (no coalescing, the default
// gap, everything coalesced; reads of 64 KiB, which split the 200 KB rows of
// the 3 × 100,000 tensor, and of 4 MiB; reads advised to the kernel 256 KiB
// ahead), gives element for element the
// values written, widened one at a time by the reference conversions, for a
// rank's rows and columns of every tensor asked for at once and in shuffled
// order: rows of 3,000 B (shorter than a page: columns read as spans), of
// 18,000 B (a TP-8 column run of 2,250 B leaves a gap of 15,750 B: per-row
// reads where the gap allowed is smaller), bf16, f16, f32 and a vector,
// with a whole tensor asked for twice (overlapping ranges).
func TestReadSlicesMatchesReference(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	ts := []rawTensorData{
		patternTensor(BF16, 600, 1500), patternTensor(BF16, 200, 9000), patternTensor(BF16, 3, 100000),
		patternTensor(F16, 500, 1024), patternTensor(F32, 300, 1024), patternTensor(BF16, 5000, 1),
	}
	ts[5].name, ts[5].shape = "vector", []int64{5000}
	f, _ := openWrittenPread(t, ts)
	type want struct {
		raw            rawTensorData
		r0, r1, c0, c1 int64
	}
	rng := rand.New(rand.NewSource(1))
	for _, p := range []ioPlan{
		{gap: 0, maxRead: 64 << 10, inFlight: 3},
		{gap: coalesceGapBytes, maxRead: 64 << 10, inFlight: 8},
		{gap: coalesceGapBytes, maxRead: 4 << 20, inFlight: 8},
		{gap: 1 << 40, maxRead: 4 << 20, inFlight: 2},
		{gap: coalesceGapBytes, maxRead: 64 << 10, inFlight: 3, ahead: 256 << 10},
	} {
		for _, tk := range [][2]int64{{1, 0}, {3, 1}, {8, 7}} {
			tp, k := tk[0], tk[1]
			var s []Slice
			var ws []want
			for _, raw := range ts {
				x, _ := f.Tensor(raw.name)
				rows, cols := raw.shape[0], int64(1)
				if len(raw.shape) == 2 {
					cols = raw.shape[1]
				}
				r0, r1 := k*rows/tp, (k+1)*rows/tp
				s = append(s, Slice{Tensor: x, Lo: r0, Hi: r1, Dst: make([]float32, (r1-r0)*cols)})
				ws = append(ws, want{raw, r0, r1, 0, cols})
				if len(raw.shape) == 2 {
					c0, c1 := k*cols/tp, (k+1)*cols/tp
					s = append(s, Slice{Tensor: x, Cols: true, Lo: c0, Hi: c1, Dst: make([]float32, rows*(c1-c0))})
					ws = append(ws, want{raw, 0, rows, c0, c1})
				}
			}
			x, _ := f.Tensor(ts[0].name) // the whole of one tensor again
			s = append(s, Slice{Tensor: x, Lo: 0, Hi: 600, Dst: make([]float32, 600*1500)})
			ws = append(ws, want{ts[0], 0, 600, 0, 1500})
			rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i]; ws[i], ws[j] = ws[j], ws[i] })
			if err := readSlices(s, p); err != nil {
				t.Fatalf("%+v tp %d rank %d: %v", p, tp, k, err)
			}
			for i, w := range ws {
				cols, n := int64(1), w.c1-w.c0
				if len(w.raw.shape) == 2 {
					cols = w.raw.shape[1]
				}
				for r := w.r0; r < w.r1; r++ {
					for c := w.c0; c < w.c1; c++ {
						g, e := s[i].Dst[(r-w.r0)*n+c-w.c0], w.raw.want(r*cols+c)
						if math.Float32bits(g) != math.Float32bits(e) {
							t.Fatalf("%+v tp %d rank %d: %s cols %v [%d][%d] = %g, want %g", p, tp, k, w.raw.name, s[i].Cols, r, c, g, e)
						}
					}
				}
			}
		}
	}
}

// planReads by hand, on pages of 4 KiB: segments A [100, 300), B [5000,
// 5100) and C [200000, 200010) of one file and D [100, 300) of another.
// With gaps up to 8 KiB allowed, B (4,700 B past A) joins A in one read,
// widened to pages: [0, 8192); C starts 194,900 B past B: its own read,
// [196608, 200704) (pages 48 and 49·4096); D is another file. With no gap
// allowed, A and B are read apart, [0, 4096) and [4096, 8192). With reads
// capped at 2 KiB (a read may pass the cap by the page it is widened to),
// [0, 8192) is too long: A and B apart again.
func TestPlanReadsByHand(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skipf("pages of %d bytes: the expected reads are worked out for 4 KiB", os.Getpagesize())
	}
	f1, f2 := new(os.File), new(os.File)
	seg := func(fd *os.File, off, run int64) segment {
		return segment{fd: fd, size: 1 << 20, off: off, run: run, count: 1}
	}
	segs := []segment{seg(f1, 100, 200), seg(f1, 5000, 100), seg(f1, 200000, 10), seg(f2, 100, 200)}
	type rd struct {
		fd     *os.File
		lo, hi int64
		n      int
	}
	for _, c := range []struct {
		p    ioPlan
		want []rd
	}{
		{ioPlan{gap: 8192, maxRead: 1 << 20}, []rd{{f1, 0, 8192, 2}, {f1, 196608, 200704, 1}, {f2, 0, 4096, 1}}},
		{ioPlan{gap: 0, maxRead: 1 << 20}, []rd{{f1, 0, 4096, 1}, {f1, 4096, 8192, 1}, {f1, 196608, 200704, 1}, {f2, 0, 4096, 1}}},
		{ioPlan{gap: 8192, maxRead: 2048}, []rd{{f1, 0, 4096, 1}, {f1, 4096, 8192, 1}, {f1, 196608, 200704, 1}, {f2, 0, 4096, 1}}},
	} {
		got := planReads(segs, c.p)
		if len(got) != len(c.want) {
			t.Fatalf("%+v: %d reads, want %d", c.p, len(got), len(c.want))
		}
		for i, w := range c.want {
			if g := got[i]; g.fd != w.fd || g.lo != w.lo || g.hi != w.hi || len(g.segs) != w.n {
				t.Errorf("%+v: read %d = [%d, %d) with %d segments, want [%d, %d) with %d", c.p, i, g.lo, g.hi, len(g.segs), w.lo, w.hi, w.n)
			}
		}
	}
}

// A bad slice is refused before anything is read, naming the tensor, the
// file, the range and what is allowed.
func TestReadSlicesRefusesBadSlices(t *testing.T) {
	ts := []rawTensorData{patternTensor(BF16, 4, 6), {"ids", "I64", []int64{2}, make([]byte, 16)}, patternTensor(F32, 3, 1)}
	ts[2].name, ts[2].shape = "vec", []int64{3}
	f, path := openWritten(t, ts)
	m, _ := f.Tensor(ts[0].name)
	ids, _ := f.Tensor("ids")
	vec, _ := f.Tensor("vec")
	for _, c := range []struct {
		s    Slice
		want string
	}{
		{Slice{Tensor: m, Lo: 0, Hi: 2, Dst: make([]float32, 11)}, "rows [0, 2) are 12 values, the buffer holds 11"},
		{Slice{Tensor: m, Cols: true, Lo: 1, Hi: 3, Dst: make([]float32, 7)}, "columns [1, 3) are 8 values, the buffer holds 7"},
		{Slice{Tensor: m, Lo: 3, Hi: 5, Dst: make([]float32, 12)}, "rows [3, 5) outside [0, 4)"},
		{Slice{Tensor: m, Cols: true, Lo: 4, Hi: 7, Dst: make([]float32, 12)}, "columns [4, 7) outside [0, 6)"},
		{Slice{Tensor: ids, Lo: 0, Hi: 1, Dst: make([]float32, 1)}, "dtype I64 cannot be read as float32 (allowed: F32, F16, BF16)"},
		{Slice{Tensor: vec, Cols: true, Lo: 0, Hi: 1, Dst: make([]float32, 1)}, "Cols needs a tensor of rank 2, shape is [3]"},
	} {
		good := Slice{Tensor: m, Lo: 0, Hi: 4, Dst: make([]float32, 24)}
		err := ReadSlices([]Slice{good, c.s})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%+v: error %v, want one naming %s and saying %q", c.s, err, path, c.want)
		}
		if good.Dst[1] != 0 {
			t.Errorf("%+v: the good slice was read before the bad one was refused", c.s)
		}
	}
}
