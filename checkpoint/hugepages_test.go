package checkpoint

import (
	"math"
	"syscall"
	"testing"
	"unsafe"
)

// hugeRange is the whole 2 MiB pages inside [addr, addr+n). Hand-derived:
// 0x1f0000 + 0x500000 bytes ends at 0x6f0000; the first 2 MiB boundary at
// or past 0x1f0000 is 0x200000, the last at or before 0x6f0000 is 0x600000.
// An aligned start keeps its address; a span inside one huge page has none
// (lo > hi or lo == hi).
func TestHugeRange(t *testing.T) {
	for _, c := range []struct{ addr, n, lo, hi uintptr }{
		{0x1f0000, 0x500000, 0x200000, 0x600000},
		{0x400000, 0x400000, 0x400000, 0x800000}, // exactly two pages
		{0x400000, 0x3fffff, 0x400000, 0x600000}, // one byte short of the second
		{0x201000, 0x1ff000, 0x400000, 0x400000}, // ends on a boundary, no whole page
		{0x201000, 0x1000, 0x400000, 0x200000},   // inside one page
	} {
		lo, hi := hugeRange(c.addr, c.n)
		if lo != c.lo || hi != c.hi {
			t.Errorf("hugeRange(%#x, %#x) = [%#x, %#x), want [%#x, %#x)", c.addr, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

// NewFloat32s advises exactly the whole huge pages of its values: one call
// for 3 Mi values (12 MiB, at least five whole 2 MiB pages wherever the
// heap puts them), its range 2 MiB-aligned, inside the values and short of
// each end by less than a huge page; no call for 1,000 values (4 KB) or
// none. The values come back zeroed, of the length asked, either way.
func TestNewFloat32sAdvice(t *testing.T) {
	old := adviseHuge
	defer func() { adviseHuge = old }()
	var got [][]byte
	adviseHuge = func(b []byte) error { got = append(got, b); return nil }
	for _, c := range []struct{ n, calls int }{{3 << 20, 1}, {1000, 0}, {0, 0}} {
		got = nil
		s := NewFloat32s(c.n)
		if len(s) != c.n {
			t.Fatalf("NewFloat32s(%d): %d values", c.n, len(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("NewFloat32s(%d)[%d] = %g, want 0", c.n, i, v)
			}
		}
		if len(got) != c.calls {
			t.Fatalf("NewFloat32s(%d): %d advice calls, want %d", c.n, len(got), c.calls)
		}
		if c.calls == 0 {
			continue
		}
		base, end := uintptr(unsafe.Pointer(&s[0])), uintptr(unsafe.Pointer(&s[0]))+uintptr(4*c.n)
		lo := uintptr(unsafe.Pointer(&got[0][0]))
		hi := lo + uintptr(len(got[0]))
		if lo%hugePageBytes != 0 || hi%hugePageBytes != 0 || lo < base || hi > end || lo-base >= hugePageBytes || end-hi >= hugePageBytes {
			t.Errorf("NewFloat32s(%d) at [%#x, %#x) advised [%#x, %#x): want the whole 2 MiB pages inside", c.n, base, end, lo, hi)
		}
	}
}

// Where the kernel refuses the huge-page advice (EINVAL: no transparent
// huge pages), NewFloat32s's values are read into all the same: tensors of
// each float type at odd sizes (rows of 77 bf16 values, 3 × 5 f16, a 4.9 MB
// f32 tensor spanning two 4 MiB reads and whole huge pages, 3 Mi + 1 bf16
// values), read whole with one ReadSlices into NewFloat32s buffers, element
// for element against the reference conversions, with the advice refused
// and with the system's own.
func TestHugeAdviceRefusedSameValues(t *testing.T) {
	ts := []rawTensorData{patternTensor(BF16, 1001, 77), patternTensor(F16, 3, 5), patternTensor(F32, 1200, 1024), patternTensor(BF16, 1, 3<<20+1)}
	f, _ := openWritten(t, ts)
	old := adviseHuge
	defer func() { adviseHuge = old }()
	for _, refuse := range []bool{true, false} {
		var calls int
		adviseHuge = func(b []byte) error {
			calls++
			if refuse {
				return syscall.EINVAL
			}
			return old(b)
		}
		var sl []Slice
		for _, raw := range ts {
			x, ok := f.Tensor(raw.name)
			if !ok {
				t.Fatalf("no tensor %s", raw.name)
			}
			sl = append(sl, Slice{Tensor: x, Lo: 0, Hi: raw.shape[0], Dst: NewFloat32s(int(raw.shape[0] * raw.shape[1]))})
		}
		if calls == 0 {
			t.Fatal("no buffer was advised: the path under test was not taken")
		}
		if err := ReadSlices(sl); err != nil {
			t.Fatal(err)
		}
		for i, raw := range ts {
			for k, e := range sl[i].Dst {
				if want := raw.want(int64(k)); math.Float32bits(e) != math.Float32bits(want) {
					t.Fatalf("advice refused %v: %s element %d = %g, want %g", refuse, raw.name, k, e, want)
				}
			}
		}
	}
}
