package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fma32 against cases where one rounding differs from two. a = 1 + 2⁻²³:
// a² − (1 + 2⁻²²) is exactly 2⁻⁴⁶, which a product rounded to float32
// (1 + 2⁻²²) would lose. And a tie made by float64: (1 + 2⁻²³)(1 − 2⁻²³)
// + (2²⁴ + 2) is 2²⁴ + 3 − 2⁻⁴⁶, below the float32 midpoint 2²⁴ + 3, so
// once rounded it is 2²⁴ + 2; rounded to float64 first (ulp 2⁻²⁸ there)
// it is the midpoint itself, and the tie goes to the even 2²⁴ + 4.
func TestFMA32(t *testing.T) {
	a := math.Nextafter32(1, 2) // 1 + 2⁻²³
	if got, want := fma32(a, a, -float32(1+0x1p-22)), float32(0x1p-46); got != want {
		t.Errorf("fma32((1+2⁻²³)², −(1+2⁻²²)) = %g, want 2⁻⁴⁶", got)
	}
	b := float32(1 - 0x1p-23)
	if got := fma32(a, b, 0x1p24+2); got != 0x1p24+2 {
		t.Errorf("fma32(1 + 2⁻²³, 1 − 2⁻²³, 2²⁴ + 2) = %.1f, want %.1f", got, float32(0x1p24+2))
	}
	if got := fma32(0x1p-24, a, 0x1p60); got != 0x1p60 {
		t.Errorf("fma32(2⁻²⁴, 1 + 2⁻²³, 2⁶⁰) = %g, want 2⁶⁰", got)
	}
}

// The model against a float64 product with the bound of gemv_emu_test.go,
// in every element type, on shapes with and without splits; and the
// split changes the bits somewhere (the order is the split's).
func TestGemvModelAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		for _, tc := range []gemvCase{{1, 64, 64, 64}, {3, 520, 136, 128}, {8, 256, 200, 64}, {5, 48, 24, 16}, {2, 4096, 16, 512}} {
			x, w := make([]float32, tc.m*tc.k), make([]float32, tc.k*tc.n)
			for i := range x {
				x[i] = dt.round(2*rng.Float32() - 1)
			}
			for i := range w {
				w[i] = dt.round(2*rng.Float32() - 1)
			}
			got := gemvModel(x, w, tc.m, tc.k, tc.n, tc.chunk, dt.round)
			for r := 0; r < tc.m; r++ {
				for c := 0; c < tc.n; c++ {
					var want, mag float64
					for k := 0; k < tc.k; k++ {
						p := float64(x[r*tc.k+k]) * float64(w[k*tc.n+c])
						want, mag = want+p, mag+math.Abs(p)
					}
					a := float64(tc.k+16) * 0x1p-24 * mag
					if e := math.Abs(float64(got[r*tc.n+c]) - want); !(e <= a+st.u*(math.Abs(want)+a)) {
						t.Fatalf("%s M %d K %d N %d: out[%d][%d] = %g, want %g", st.name, tc.m, tc.k, tc.n, r, c, got[r*tc.n+c], want)
					}
				}
			}
		}
	}
	// fp32, K 4096: one split against eight differs in some bit of 16 outputs.
	x, w := make([]float32, 4096), make([]float32, 4096*16)
	for i := range x {
		x[i] = 2*rng.Float32() - 1
	}
	for i := range w {
		w[i] = 2*rng.Float32() - 1
	}
	one, eight := gemvModel(x, w, 1, 4096, 16, 4096, dtypes["fp32"].round), gemvModel(x, w, 1, 4096, 16, 512, dtypes["fp32"].round)
	same := 0
	for i := range one {
		if one[i] == eight[i] {
			same++
		}
	}
	if same == len(one) {
		t.Error("the model gives the same bits with 1 and 8 splits: the split is not in its order")
	}
}
