package checkpoint

import (
	"encoding/binary"
	"math"
)

// Placement is where a Slice's values go when they are not wanted row-major
// in a buffer of their own: value (r, c) of the slice — row r, column c of
// the [rows][width] values Dst would hold (a vector's elements are rows of
// width 1) — is written to Data[Row[r] + c·Step]. A transposed slice has
// Step = the destination's row length and Row[r] = the destination column of
// the slice's row r; a slice laid side by side with others (columns of a
// wider tensor) has Step = 1 and Row[r] = the start of its part of the
// destination's row r. The conversion from the file's dtype and the layout
// are one pass over the bytes read, so no full-size intermediate (the slice
// row-major, then its transpose) is made: rows are taken 64 at a time, and
// where their destination columns are in order or permuted within 64 (q
// and k heads), each source column's 64 values are gathered down the rows
// (which stay in the core's cache from one column to the next), converted
// and written contiguously into the destination row; rows placed anywhere
// go through a 64 × 64 tile.
//
// ReadSlices checks that every write falls inside Data; it does not check
// that placements are disjoint: slices read together must not write the same
// element (their reads run on several goroutines).
type Placement struct {
	Data []float32
	Row  []int
	Step int
}

// placeTile is the rows a placed read takes at a time, and the side of the
// tile rows placed anywhere are converted through: 64 × 64 float32 is
// 16 KiB, within any core's L1 data cache beside the 64 rows of source
// bytes it comes from.
const placeTile = 64

// check validates p for a slice of rows × width values.
func (p *Placement) check(t Tensor, rows, width int64) error {
	if int64(len(p.Row)) != rows {
		return t.errorf("placement has %d row offsets for %d rows", len(p.Row), rows)
	}
	if p.Step < 1 {
		return t.errorf("placement step %d: must be at least 1", p.Step)
	}
	if width == 0 {
		return nil
	}
	span := (width - 1) * int64(p.Step)
	for r, o := range p.Row {
		if o < 0 || int64(o)+span >= int64(len(p.Data)) {
			return t.errorf("placement of row %d at %d with step %d over %d columns leaves its buffer of %d values", r, o, p.Step, width, len(p.Data))
		}
	}
	return nil
}

// putRange converts n values held contiguously in src, the first being
// value e of the slice in row-major order (rows of width values), into p:
// a partial first row, whole rows in tiles, a partial last row.
func (p *Placement) putRange(src []byte, e, n, width int64, d DType) {
	if n <= 0 || width <= 0 {
		return
	}
	es := d.Size()
	r, c := e/width, e%width
	if c != 0 { // the rest of row r
		k := min(n, width-c)
		p.putBlock(src, 0, r, 1, c, c+k, d)
		src, n, r = src[k*es:], n-k, r+1
	}
	if full := n / width; full > 0 {
		p.putBlock(src, width*es, r, full, 0, width, d)
		src, n, r = src[full*width*es:], n-full*width, r+full
	}
	if n > 0 { // the start of the last row
		p.putBlock(src, 0, r, 1, 0, n, d)
	}
}

// putBlock converts columns [c0, c1) of slice rows [r0, r0+nr) into p; row
// r0+i's values start at src[i·pitch] (column c0 first).
func (p *Placement) putBlock(src []byte, pitch, r0, nr, c0, c1 int64, d DType) {
	es, w, step := d.Size(), c1-c0, int64(p.Step)
	if step == 1 { // each row's values are contiguous in Data: decode straight there
		for i := int64(0); i < nr; i++ {
			o := int64(p.Row[r0+i]) + c0
			decode(p.Data[o:o+w], src[i*pitch:i*pitch+w*es], d)
		}
		return
	}
	// tile holds a tile of ih rows × cw columns column by column
	// (tile[b·placeTile + a] is row a's column b) for rows placed anywhere.
	var tile [placeTile * placeTile]float32
	for i := int64(0); i < nr; i += placeTile {
		ih := min(placeTile, nr-i)
		rows := p.Row[r0+i : r0+i+ih]
		// The tile's rows go to columns [lo, lo+ih) (in order, or permuted
		// within them, as q and k heads are), or anywhere.
		lo, hi, inOrder := rows[0], rows[0], true
		for a, ro := range rows {
			lo, hi = min(lo, ro), max(hi, ro)
			inOrder = inOrder && ro == rows[0]+a
		}
		window := int64(hi-lo) < ih
		if inOrder || window {
			p.gather(src[i*pitch:], pitch, rows, lo, c0, w, inOrder, d)
			continue
		}
		for c := int64(0); c < w; c += placeTile {
			cw := min(placeTile, w-c)
			for a := int64(0); a < ih; a++ {
				o := (i+a)*pitch + c*es
				decodeColumn(&tile, int(a), src[o:o+cw*es], d)
			}
			for b := int64(0); b < cw; b++ {
				col := tile[b*placeTile : b*placeTile+ih]
				base := (c0 + c + b) * step
				for a, ro := range rows {
					p.Data[int64(ro)+base] = col[a]
				}
			}
		}
	}
}

// readPlacedMem converts the slice x (with a Placement) from the file's
// bytes in memory, in blocks of rows converted in parallel (forBlocks).
func (x *Slice) readPlacedMem() error {
	t, p := x.Tensor, x.Place
	es := t.Info.DType.Size()
	rows, cols, _ := t.dims2("Rows") // checked by check
	if x.Cols {
		w := x.Hi - x.Lo
		if w == 0 {
			return nil
		}
		return forBlocks(rows, cols*es, func(r0, r1 int64) error {
			o := (r0*cols + x.Lo) * es
			p.putBlock(t.data[o:], cols*es, r0, r1-r0, 0, w, t.Info.DType)
			return nil
		})
	}
	return forBlocks(x.Hi-x.Lo, cols*es, func(r0, r1 int64) error {
		o := (x.Lo + r0) * cols * es
		p.putBlock(t.data[o:], cols*es, r0, r1-r0, 0, cols, t.Info.DType)
		return nil
	})
}

// gather writes columns [c0, c0+w) of up to placeTile rows of dtype d
// (row a at src[a·pitch], column c0 first), whose destination columns are
// rows (in order from lo, or permuted within [lo, lo+len(rows))), straight
// into each destination row: the values of one source column are gathered
// down the rows, whose bytes stay in the core's cache from one column to
// the next, converted, and written contiguously.
func (p *Placement) gather(src []byte, pitch int64, rows []int, lo int, c0, w int64, inOrder bool, d DType) {
	ih, es, step := int64(len(rows)), d.Size(), int64(p.Step)
	src = src[:(ih-1)*pitch+w*es]
	b := int64(0)
	if d == BF16 && inOrder { // two columns at once: one 4-byte load feeds two destination rows
		for ; b+1 < w; b += 2 {
			base := (c0+b)*step + int64(lo)
			dst0 := p.Data[base : base+ih]
			dst1 := p.Data[base+step : base+step+ih]
			dst1 = dst1[:len(dst0)]
			o := 2 * b
			for a := range dst0 {
				v := binary.LittleEndian.Uint32(src[o:])
				dst0[a] = math.Float32frombits(v << 16)
				dst1[a] = math.Float32frombits(v &^ 0xffff)
				o += pitch
			}
		}
	}
	for ; b < w; b++ {
		base := (c0+b)*step + int64(lo)
		dst := p.Data[base : base+ih]
		o := es * b
		switch {
		case d == BF16 && inOrder:
			for a := range dst {
				dst[a] = math.Float32frombits(uint32(src[o])<<16 | uint32(src[o+1])<<24)
				o += pitch
			}
		case d == BF16:
			for _, ro := range rows {
				dst[ro-lo] = math.Float32frombits(uint32(src[o])<<16 | uint32(src[o+1])<<24)
				o += pitch
			}
		case d == F16:
			tab := f16Table()
			for a, ro := range rows {
				if inOrder {
					ro = lo + a
				}
				dst[ro-lo] = tab[uint16(src[o])|uint16(src[o+1])<<8]
				o += pitch
			}
		default: // F32 (check allowed only float dtypes)
			for a, ro := range rows {
				if inOrder {
					ro = lo + a
				}
				dst[ro-lo] = math.Float32frombits(uint32(src[o]) | uint32(src[o+1])<<8 | uint32(src[o+2])<<16 | uint32(src[o+3])<<24)
				o += pitch
			}
		}
	}
}
