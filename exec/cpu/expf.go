package cpu

import "math"

// expf is e^x in float32 arithmetic, after Cephes' expf (S. L. Moshier):
// x = n·ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 split in two constants, so r is
// exact), e^r by a degree-7 polynomial, then 2^n put into the exponent
// bits. Relative error ≤ 2 ulp of float32 (TestExpfAgainstMathExp). Outside
// [−87.3, 88.3] (where 2^n would leave float32's normal range) and for NaN
// it falls back to math.Exp. Small enough to inline into the softmax and
// SiLU loops, where a call to math.Exp per element costs more.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	if !(x >= -87.3 && x <= 88.3) {
		return expfEdge(x)
	}
	f := log2e * x
	k := int32(f + 0.5)
	if f < 0 {
		k = int32(f - 0.5)
	}
	n := float32(k)
	r := x - n*c1 - n*c2
	p := (((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r+5.0000001201e-1)*r*r + r + 1
	return p * math.Float32frombits(uint32(k+127)<<23)
}

// expfEdge is e^x where expf's scaling would leave float32's normal range.
//
//go:noinline
func expfEdge(x float32) float32 { return float32(math.Exp(float64(x))) }

// expfSlice sets v[i] = expf(v[i]): expf's body written out in the loop
// (the compiler does not inline expf), so a slice costs no call per element.
func expfSlice(v []float32) {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	for i, x := range v {
		if !(x >= -87.3 && x <= 88.3) {
			v[i] = expfEdge(x)
			continue
		}
		f := log2e * x
		k := int32(f + 0.5)
		if f < 0 {
			k = int32(f - 0.5)
		}
		n := float32(k)
		r := x - n*c1 - n*c2
		p := (((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r+5.0000001201e-1)*r*r + r + 1
		v[i] = p * math.Float32frombits(uint32(k+127)<<23)
	}
}
