package checkpoint

import (
	"encoding/binary"
	"math"
	"runtime"
	"testing"
)

// Large slices, read with pread (readSegments) from an open file and in
// parallel blocks from a file in memory (the mapping only, as where there
// is no mmap): every path (rows, columns of short rows read as spans,
// columns of long rows, the whole tensor) gives, element for element, the
// bf16 / f16 / f32 values written, widened one at a time by the reference
// conversions. 3,000 × 1,500 bf16 (9 MB) spans three 4 MiB reads or
// blocks; 700 × 9,000 has rows of 18 KB (a TP-8 column run of 2,250 B is
// 15,750 B from the next: under the 64 KiB gap, a span; the gap-0 plan is
// TestReadSlicesMatchesReference's); 5 × 300,000 has fewer rows than a
// block would hold; f16 and f32 tensors of 4–4.5 MB cross one boundary.
// The pread paths are checked again with the file opened for direct I/O
// (where the file system has it): reads rounded up to pages, the last one
// past the end of the file.
func TestLargeSlicesReadInParallel(t *testing.T) {
	old := runtime.GOMAXPROCS(4) // several workers even on a 1-core machine
	defer runtime.GOMAXPROCS(old)
	type shape struct{ rows, cols int64 }
	shapes := map[DType][]shape{BF16: {{3000, 1500}, {700, 9000}, {5, 300000}}, F16: {{2100, 1024}}, F32: {{1100, 1024}}}
	var ts []rawTensorData
	for _, d := range []DType{BF16, F16, F32} {
		for _, s := range shapes[d] {
			ts = append(ts, patternTensor(d, s.rows, s.cols))
		}
	}
	f, _ := openWrittenPread(t, ts)
	mapped := *f
	mapped.fd = nil // the same bytes, converted from the mapping alone
	files := []*File{f, &mapped}
	direct := *f // the same file read with direct I/O where it has it
	if direct.direct = openDirect(f.path); direct.direct != nil {
		defer direct.direct.Close()
		files = append(files, &direct)
	} else {
		t.Log("no direct I/O here: only the page cache's reads checked")
	}
	before := directReads.Load()
	for _, raw := range ts {
		for _, file := range files {
			x, _ := file.Tensor(raw.name)
			rows, cols := raw.shape[0], raw.shape[1]
			want := func(r, c int64) float32 { return raw.want(r*cols + c) }
			check := func(what string, got []float32, r0, r1, c0, c1 int64) {
				t.Helper()
				w := c1 - c0
				if int64(len(got)) != (r1-r0)*w {
					t.Fatalf("%s %s: %d values, want %d", raw.name, what, len(got), (r1-r0)*w)
				}
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						if g, e := got[(r-r0)*w+c-c0], want(r, c); math.Float32bits(g) != math.Float32bits(e) {
							t.Fatalf("%s %s: [%d][%d] = %g, want %g", raw.name, what, r, c, g, e)
						}
					}
				}
			}
			all, err := x.Float32()
			if err != nil {
				t.Fatal(err)
			}
			check("whole", all, 0, rows, 0, cols)
			for _, tp := range []int64{1, 3, 8} {
				for _, k := range []int64{0, tp - 1} {
					r0, r1 := k*rows/tp, (k+1)*rows/tp
					got, err := x.Rows(r0, r1)
					if err != nil {
						t.Fatal(err)
					}
					check("rows", got, r0, r1, 0, cols)
					c0, c1 := k*cols/tp, (k+1)*cols/tp
					if got, err = x.Cols(c0, c1); err != nil {
						t.Fatal(err)
					}
					check("cols", got, 0, rows, c0, c1)
				}
			}
		}
	}
	if direct.direct != nil && directReads.Load() == before {
		t.Error("direct I/O opened, but no read went through it")
	}
}

// patternTensor is a rows × cols tensor of dtype d named after both, its
// elements a pattern of finite values with every exponent in play.
func patternTensor(d DType, rows, cols int64) rawTensorData {
	n := int(rows * cols)
	data := make([]byte, n*int(d.Size()))
	for i := 0; i < n; i++ {
		bits := uint32(i*2654435761) & 0x3fff_ffff
		switch d {
		case BF16:
			binary.LittleEndian.PutUint16(data[2*i:], uint16(bits>>16)&0x7f7f)
		case F16:
			binary.LittleEndian.PutUint16(data[2*i:], uint16(bits)&0x7bff)
		case F32:
			binary.LittleEndian.PutUint32(data[4*i:], bits&0x7f7fffff)
		}
	}
	return rawTensorData{string(d) + "-" + itoa(rows) + "x" + itoa(cols), d, []int64{rows, cols}, data}
}

// want is element i of the tensor widened by the reference conversions,
// one element at a time.
func (raw rawTensorData) want(i int64) float32 {
	switch raw.dtype {
	case BF16:
		return BF16ToFloat32(binary.LittleEndian.Uint16(raw.data[2*i:]))
	case F16:
		return F16ToFloat32(binary.LittleEndian.Uint16(raw.data[2*i:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(raw.data[4*i:]))
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}
