package checkpoint

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestF16HandPatterns(t *testing.T) {
	// Each value is derived from the binary16 layout: sign | 5-bit exponent
	// (bias 15) | 10-bit fraction.
	for _, c := range []struct {
		bits uint16
		want float32
	}{
		{0x3C00, 1},                              // exp 15 → 2^0, fraction 0
		{0xC000, -2},                             // sign, exp 16 → 2^1
		{0x3555, 0.333251953125},                 // 2^-2 · (1 + 0x155/1024) = 0.25 · 1.3330078125
		{0x7BFF, 65504},                          // largest normal: 2^15 · (2 − 2^-10)
		{0x0400, 1.0 / 16384},                    // smallest normal 2^-14
		{0x0001, float32(math.Ldexp(1, -24))},    // smallest subnormal 2^-24
		{0x03FF, float32(math.Ldexp(1023, -24))}, // largest subnormal 1023 · 2^-24
		{0x8000, float32(math.Copysign(0, -1))},  // −0
		{0x7C00, float32(math.Inf(1))},
		{0xFC00, float32(math.Inf(-1))},
	} {
		got := F16ToFloat32(c.bits)
		if math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("F16ToFloat32(%#04x) = %v (%#08x), want %v (%#08x)", c.bits, got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
	}
	if v := F16ToFloat32(0x7E00); !math.IsNaN(float64(v)) {
		t.Errorf("F16ToFloat32(0x7E00) = %v, want NaN", v)
	}
}

// TestF16Exhaustive checks all 65536 patterns against the textbook formula
// evaluated in float64 (an independent derivation: no bit manipulation).
func TestF16Exhaustive(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		s, e, f := b>>15, (b>>10)&0x1f, b&0x3ff
		var want float64
		switch {
		case e == 0x1f && f != 0:
			if !math.IsNaN(float64(F16ToFloat32(uint16(b)))) {
				t.Fatalf("%#04x: want NaN", b)
			}
			continue
		case e == 0x1f:
			want = math.Inf(1)
		case e == 0:
			want = math.Ldexp(float64(f), -24)
		default:
			want = math.Ldexp(float64(1024+f), e-25)
		}
		if s == 1 {
			want = math.Copysign(want, -1)
		}
		if got := F16ToFloat32(uint16(b)); math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("F16ToFloat32(%#04x) = %v, want %v", b, got, want)
		}
	}
}

func TestBF16HandPatterns(t *testing.T) {
	// bfloat16: sign | 8-bit exponent (bias 127) | 7-bit fraction.
	for _, c := range []struct {
		bits uint16
		want float32
	}{
		{0x3F80, 1},                            // exp 127, fraction 0
		{0xC040, -3},                           // sign, exp 128 → 2, fraction 0x40/128 = 0.5 → 2·1.5
		{0x4049, 3.140625},                     // exp 128 → 2 · (1 + 0x49/128) = 2 · 1.5703125
		{0x0001, float32(math.Ldexp(1, -133))}, // subnormal: 1·2^-7 · 2^-126
		{0x7F80, float32(math.Inf(1))},
	} {
		if got := BF16ToFloat32(c.bits); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("BF16ToFloat32(%#04x) = %v, want %v", c.bits, got, c.want)
		}
	}
}

// Every binary16 bit pattern (±0, subnormals, normals, ±infinity, NaNs
// with their payloads) decodes, through the looked-up table, to the bits
// F16ToFloat32 gives it, in a row-major buffer (decode) and down a tile's
// column (decodeColumn).
func TestDecodeF16EveryPattern(t *testing.T) {
	src := every16BitPattern()
	dst := make([]float32, 1<<16)
	decode(dst, src, F16)
	var tile [placeTile * placeTile]float32
	for i := range 1 << 16 {
		want := math.Float32bits(F16ToFloat32(uint16(i)))
		if got := math.Float32bits(dst[i]); got != want {
			t.Fatalf("decode of %#04x: %#08x, F16ToFloat32 %#08x", i, got, want)
		}
		if i%placeTile == 0 {
			decodeColumn(&tile, 5, src[2*i:2*(i+placeTile)], F16)
		}
		if got := math.Float32bits(tile[(i%placeTile)*placeTile+5]); got != want {
			t.Fatalf("decodeColumn of %#04x: %#08x, F16ToFloat32 %#08x", i, got, want)
		}
	}
}

// Every bfloat16 bit pattern decodes to the binary32 whose top half it is
// (the definition of bfloat16: the low 16 bits zero), at every length from
// 0 to 19 (the four-at-a-time loop and the one to three left after it)
// and from every byte offset of the source (a read's segment may start on
// any even byte, and an 8-byte load need not be aligned); the elements
// past the length are left as they were.
func TestDecodeBF16EveryPatternEveryLength(t *testing.T) {
	src := every16BitPattern()
	dst := make([]float32, 1<<16)
	decode(dst, src, BF16)
	for i := range 1 << 16 {
		if got, want := math.Float32bits(dst[i]), uint32(i)<<16; got != want {
			t.Fatalf("decode of %#04x: %#08x, want %#08x", i, got, want)
		}
	}
	const sentinel = 12345.5
	for start := 0; start < 4; start++ { // bytes into src
		for n := 0; n < 20; n++ {
			raw := src[2*300+start:] // patterns 300, 301, … shifted by start bytes
			out := make([]float32, n+3)
			for i := range out {
				out[i] = sentinel
			}
			decode(out[:n], raw, BF16)
			for i := range n {
				want := uint32(raw[2*i])<<16 | uint32(raw[2*i+1])<<24
				if got := math.Float32bits(out[i]); got != want {
					t.Fatalf("start %d, length %d: element %d is %#08x, want %#08x", start, n, i, got, want)
				}
			}
			for i := n; i < len(out); i++ {
				if out[i] != sentinel {
					t.Fatalf("start %d, length %d: element %d past the length written (%v)", start, n, i, out[i])
				}
			}
		}
	}
}

// every16BitPattern is the 65,536 16-bit patterns in order, little-endian.
func every16BitPattern() []byte {
	src := make([]byte, 2<<16)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i))
	}
	return src
}
