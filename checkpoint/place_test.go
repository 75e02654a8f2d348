package checkpoint

import (
	"math"
	"runtime"
	"strings"
	"testing"
)

// placedCase is one slice read with a Placement and the same slice read
// row-major (the two-step path: ReadRows / ReadCols, then the layout by a
// plain loop).
type placedCase struct {
	name string
	raw  rawTensorData
	cols bool
	lo   int64
	hi   int64
	// mode "side": side by side, Row[r] = r·(width+5) + 3, Step = 1;
	// else transposed (Step = rows: a [width][rows] result) with Row[r] =
	// r ("in order"), r^1 where below rows ("pairs": permuted within each
	// 64-row tile, as q and k heads are), or the even rows to the first
	// half of the columns and the odd ones to the second ("spread": beyond
	// a tile's 64 columns once rows > 128).
	mode string
}

// rowsWidth is the slice's rows and values per row.
func (c placedCase) rowsWidth() (int64, int64) {
	cols := int64(1)
	if len(c.raw.shape) == 2 {
		cols = c.raw.shape[1]
	}
	if c.cols {
		return c.raw.shape[0], c.hi - c.lo
	}
	return c.hi - c.lo, cols
}

// placement makes the case's Placement over a fresh buffer (mode above;
// side by side, each row starts 3 values into a row of width+5, so the
// placement is not contiguous).
func (c placedCase) placement() *Placement {
	rows, w := c.rowsWidth()
	p := &Placement{Row: make([]int, rows)}
	if c.mode == "side" {
		p.Step, p.Data = 1, make([]float32, rows*(w+5))
		for r := range p.Row {
			p.Row[r] = r*int(w+5) + 3
		}
		return p
	}
	p.Step, p.Data = int(rows), make([]float32, rows*w)
	half := (int(rows) + 1) / 2
	for r := range p.Row {
		switch {
		case c.mode == "pairs" && int64(r^1) < rows:
			p.Row[r] = r ^ 1
		case c.mode == "spread":
			p.Row[r] = (r%2)*half + r/2
		default:
			p.Row[r] = r
		}
	}
	return p
}

// TestReadSlicesPlacedMatchesTwoStep: slices read with a Placement (the
// conversion and the layout in one pass) equal, bit for bit, the same
// slices read row-major by ReadRows / ReadCols and then laid out by a plain
// loop (value (r, c) to Data[Row[r] + c·Step]), and nothing else of Data is
// written, for bf16, f16 and f32; shapes 1 × n, n × 1, a vector, 67 × 131
// and 130 × 200 (not multiples of the 64-value tile), 100 × 9,000 (bf16 and
// f32; rows of 18 and 36 KB: a 64 KiB read ends inside a row, so reads start
// and end mid-row);
// rows and columns, side by side and transposed with the rows' columns in
// order, permuted within a tile and spread beyond it; read with the default plan,
// reads of 64 KiB, no gaps coalesced, pieces of 788 B (a piece ends one
// value into a row), and from memory (no pread: blocks of rows in parallel).
func TestReadSlicesPlacedMatchesTwoStep(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	var ts []rawTensorData
	for _, d := range []DType{BF16, F16, F32} {
		shapes := [][2]int64{{1, 300}, {300, 1}, {67, 131}, {130, 200}}
		if d != F16 { // f16 splits reads where bf16 does (2-byte values)
			shapes = append(shapes, [2]int64{100, 9000})
		}
		for _, s := range shapes {
			ts = append(ts, patternTensor(d, s[0], s[1]))
		}
		v := patternTensor(d, 77, 1)
		v.name, v.shape = v.name+"-vector", []int64{77}
		ts = append(ts, v)
	}
	var cases []placedCase
	for _, raw := range ts {
		rows := raw.shape[0]
		for _, mode := range []string{"side", "in order", "pairs", "spread"} {
			cases = append(cases, placedCase{raw.name + " rows", raw, false, rows / 3, rows, mode})
			if len(raw.shape) == 2 {
				cols := raw.shape[1]
				cases = append(cases, placedCase{raw.name + " cols", raw, true, cols / 4, cols - cols/5, mode})
			}
		}
	}
	f, _ := openWritten(t, ts)
	// The two-step path, once per case: row-major, then laid out by a loop
	// into a fresh zeroed Data.
	wants := make([][]float32, len(cases))
	for i, c := range cases {
		x, _ := f.Tensor(c.raw.name)
		var two []float32
		var err error
		if c.cols {
			two, err = x.Cols(c.lo, c.hi)
		} else {
			two, err = x.Rows(c.lo, c.hi)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := c.placement()
		rows, w := c.rowsWidth()
		for r := int64(0); r < rows; r++ {
			for k := int64(0); k < w; k++ {
				want.Data[int64(want.Row[r])+k*int64(want.Step)] = two[r*w+k]
			}
		}
		wants[i] = want.Data
	}
	mem := *f
	mem.fd = nil // the same bytes, from the mapping alone
	files := map[string]*File{"pread": f, "memory": &mem}
	plans := map[string]ioPlan{
		"default":   defaultPlan(),
		"64KiB":     {gap: coalesceGapBytes, maxRead: 64 << 10, inFlight: 3},
		"gap0-64KB": {gap: 0, maxRead: 64 << 10, inFlight: 8},
		// 788 B is 394 bf16 values: 3 rows of 131 and 1 value, so pieces
		// end one value into a row.
		"788B": {gap: coalesceGapBytes, maxRead: 788, inFlight: 3},
	}
	for fname, file := range files {
		for pname, plan := range plans {
			if fname == "memory" && pname != "default" {
				continue // the plan is not used from memory
			}
			// All the cases at once, as a rank's list is read (with 788 B
			// pieces, the small tensors only: the large ones' thousands of
			// pieces add time, not paths).
			s := make([]Slice, len(cases))
			for i, c := range cases {
				if pname == "788B" && len(c.raw.data) > 100_000 {
					continue
				}
				x, _ := file.Tensor(c.raw.name)
				s[i] = Slice{Tensor: x, Cols: c.cols, Lo: c.lo, Hi: c.hi, Place: c.placement()}
			}
			var read []Slice
			for _, x := range s {
				if x.Place != nil {
					read = append(read, x)
				}
			}
			if err := readSlices(read, plan); err != nil {
				t.Fatalf("%s %s: %v", fname, pname, err)
			}
			for i, c := range cases {
				if s[i].Place == nil {
					continue
				}
				want := wants[i]
				got := s[i].Place.Data
				for j := range want {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("%s %s: %s (%s): Data[%d] = %g, the two-step path %g", fname, pname, c.name, c.mode, j, got[j], want[j])
					}
				}
			}
		}
	}
}

// A placement that would write outside its buffer, has the wrong number
// of row offsets or a step under 1, or comes with a Dst, is refused before
// anything is read, naming the tensor, the file and the numbers.
func TestReadSlicesRefusesBadPlacements(t *testing.T) {
	ts := []rawTensorData{patternTensor(BF16, 4, 6)}
	f, path := openWritten(t, ts)
	m, _ := f.Tensor(ts[0].name)
	// Rows [0, 2) are 2 rows of 6; columns [1, 3) are 4 rows of 2.
	for _, c := range []struct {
		s    Slice
		want string
	}{
		{Slice{Tensor: m, Lo: 0, Hi: 2, Place: &Placement{Data: make([]float32, 12), Row: []int{0}, Step: 2}}, "placement has 1 row offsets for 2 rows"},
		{Slice{Tensor: m, Lo: 0, Hi: 2, Place: &Placement{Data: make([]float32, 12), Row: []int{0, 1}, Step: 0}}, "placement step 0: must be at least 1"},
		// Row 1 at 1 with step 2 over 6 columns reaches 1 + 5·2 = 11: inside 12, outside 11.
		{Slice{Tensor: m, Lo: 0, Hi: 2, Place: &Placement{Data: make([]float32, 11), Row: []int{0, 1}, Step: 2}}, "placement of row 1 at 1 with step 2 over 6 columns leaves its buffer of 11 values"},
		{Slice{Tensor: m, Cols: true, Lo: 1, Hi: 3, Place: &Placement{Data: make([]float32, 8), Row: []int{0, 1, 2, -1}, Step: 4}}, "placement of row 3 at -1"},
		{Slice{Tensor: m, Lo: 0, Hi: 1, Dst: make([]float32, 6), Place: &Placement{Data: make([]float32, 6), Row: []int{0}, Step: 1}}, "a placed slice has no Dst of its own"},
	} {
		good := Slice{Tensor: m, Lo: 0, Hi: 4, Place: &Placement{Data: make([]float32, 24), Row: []int{0, 1, 2, 3}, Step: 4}}
		err := ReadSlices([]Slice{good, c.s})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s and saying %q", c.want, err, path, c.want)
		}
		if good.Place.Data[4] != 0 {
			t.Errorf("%s: the good slice was read before the bad one was refused", c.want)
		}
	}
}
