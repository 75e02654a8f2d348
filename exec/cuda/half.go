package cuda

import "math"

// Host conversions between float32 and the 16-bit element types, for
// uploading weights and reading results back. Both round to nearest, ties
// to even, as the kernels' stores do (cvt.rn.f16.f32; the bf16 bit
// arithmetic in kernels.go).

// f32ToF16 rounds f to IEEE binary16: overflow gives ±Inf, NaN stays a
// quiet NaN, values below the smallest subnormal round to ±0.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // the binary16 exponent field
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign // below half the smallest subnormal (2^−25 rounds to 0, ties to even)
		}
		// Subnormal: value = m·2^−24 with m = mant·2^(e−14), mant with its implicit bit.
		mant |= 0x800000
		shift := uint32(14 - e)
		m := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && m&1 == 1 {
			m++ // may carry into the smallest normal: still the right encoding
		}
		return sign | uint16(m)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent, up to Inf: still right
	}
	return sign | uint16(h)
}

// f16ToF32 widens an IEEE binary16 exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0:
		f := float32(mant) / (1 << 24) // exact: mant < 2^10
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// f32ToBF16 rounds f to bfloat16 (the top half of a float32), NaN kept quiet.
func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// bf16ToF32 widens a bfloat16 exactly.
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
