package cpu

import (
	"math"
	"testing"
)

// TestExpfAgainstMathExp sweeps x over float32's range of finite, normal
// e^x in steps of 1e-3 (and the edges) against math.Exp rounded to float32:
// Cephes states ≤ 1 ulp for its expf; 2 ulp (2 × 2^−23 ≈ 2.4e−7 relative)
// leaves room for the float32 reduction.
func TestExpfAgainstMathExp(t *testing.T) {
	worst := 0.0
	for x := float32(-87.3); x <= 88.7; x += 1e-3 {
		want := math.Exp(float64(x))
		got := float64(expf(x))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 2.4e-7 {
		t.Fatalf("worst relative error %g, want ≤ 2.4e-7", worst)
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {-100, float32(math.Exp(-100))}, {88.5, float32(math.Exp(88.5))}, {100, float32(math.Inf(1))}, {float32(math.Inf(-1)), 0},
	} {
		if got := expf(c.x); got != c.want {
			t.Errorf("expf(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := expf(float32(math.NaN())); got == got {
		t.Errorf("expf(NaN) = %g, want NaN", got)
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float32, 1024)
	for i := range xs {
		xs[i] = float32(i)/64 - 8
	}
	var sink float32
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sink += float32(math.Exp(float64(x)))
			}
		}
	})
	b.Run("expf", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sink += expf(x)
			}
		}
	})
	_ = sink
}
