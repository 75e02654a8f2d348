package sim

import (
	"math"
	"testing"
)

// TestMaxFIsMax holds maxF to the built-in max on every pair of a set of
// values that covers its special cases: NaN either side (NaN), −0 and +0
// in either order (+0), ±Inf, and equal and unequal finite values. Results
// are compared bit for bit, NaN by being NaN.
func TestMaxFIsMax(t *testing.T) {
	negZero := math.Copysign(0, -1)
	vals := []float64{0, negZero, 1, -1, 2.5, 1e-300, -1e300, math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7ff8000000000001)}
	for _, m := range vals {
		for _, v := range vals {
			got, want := maxF(m, v), max(m, v)
			if math.IsNaN(want) {
				if !math.IsNaN(got) {
					t.Errorf("maxF(%v, %v) = %v, max gives NaN", m, v, got)
				}
				continue
			}
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("maxF(%v (sign %v), %v (sign %v)) = %v (sign %v), max gives %v (sign %v)",
					m, math.Signbit(m), v, math.Signbit(v), got, math.Signbit(got), want, math.Signbit(want))
			}
		}
	}
}
