package checkpoint

import (
	"encoding/binary"
	"math"
	"sync"
)

// BF16ToFloat32 widens a bfloat16 bit pattern: bfloat16 is the top half of
// an IEEE-754 binary32, so the conversion is exact.
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F16ToFloat32 widens an IEEE-754 binary16 bit pattern (1 sign, 5 exponent
// bits with bias 15, 10 fraction bits) exactly, subnormals, infinities and
// NaNs included.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN; keep the payload
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal: rebias 15 → 127
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: frac·2^-24. Normalise: shift until the implicit bit (bit 10) is set.
	e := uint32(127 - 15 + 1)
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
}

// f16Table is F16ToFloat32 of every binary16 bit pattern (256 KiB, made on
// first use, not at start-up): the converters look values up instead of
// branching on the exponent for each.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for i := range t {
		t[i] = F16ToFloat32(uint16(i))
	}
	return t
})

// decode converts little-endian elements of dtype d from src into dst
// (len(dst) elements). d must be F32, F16 or BF16. The loops index src by
// pairs or quads after one up-front reslice, so the compiler drops the
// per-element bounds checks.
func decode(dst []float32, src []byte, d DType) {
	switch d {
	case F32:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
		}
	case F16:
		src = src[:2*len(dst)]
		tab := f16Table()
		for i := range dst {
			dst[i] = tab[uint16(src[2*i])|uint16(src[2*i+1])<<8]
		}
	case BF16:
		decodeBF16(dst, src[:2*len(dst)])
	default:
		panic("checkpoint: decode of " + string(d)) // callers check Float() first
	}
}

// decodeBF16 widens the len(dst) bfloat16 values of src (2·len(dst) bytes)
// into dst, four at a time from one 8-byte load (1.5 times the
// byte-at-a-time loop's rate on the VM measured; the conversion is most of
// the CPU of loading a pre-sharded file: docs/measurements/speed.md,
// section 34), the last one to three alone.
func decodeBF16(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for len(dst) >= 4 && len(src) >= 8 {
		u := binary.LittleEndian.Uint64(src)
		lo, hi := uint32(u), uint32(u>>32)
		dst[0] = math.Float32frombits(lo << 16)
		dst[1] = math.Float32frombits(lo &^ 0xffff)
		dst[2] = math.Float32frombits(hi << 16)
		dst[3] = math.Float32frombits(hi &^ 0xffff)
		dst, src = dst[4:], src[8:]
	}
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:2*i+2])) << 16)
	}
}

// decodeColumn converts the len(src)/size ≤ placeTile elements of dtype d
// in src into column a of a tile held column by column: tile[b·placeTile +
// a] for element b. The index is masked into the tile, so the compiler
// drops the per-element bounds checks.
func decodeColumn(tile *[placeTile * placeTile]float32, a int, src []byte, d DType) {
	const m = placeTile - 1
	a &= m
	switch d {
	case F32:
		for b := 0; b < placeTile && len(src) >= 4; b++ {
			tile[(b&m)*placeTile|a] = math.Float32frombits(uint32(src[0]) | uint32(src[1])<<8 | uint32(src[2])<<16 | uint32(src[3])<<24)
			src = src[4:]
		}
	case F16:
		tab := f16Table()
		for b := 0; b < placeTile && len(src) >= 2; b++ {
			tile[(b&m)*placeTile|a] = tab[uint16(src[0])|uint16(src[1])<<8]
			src = src[2:]
		}
	case BF16:
		for b := 0; b < placeTile && len(src) >= 2; b++ {
			tile[(b&m)*placeTile|a] = math.Float32frombits(uint32(src[0])<<16 | uint32(src[1])<<24)
			src = src[2:]
		}
	default:
		panic("checkpoint: decode of " + string(d)) // callers check Float() first
	}
}
