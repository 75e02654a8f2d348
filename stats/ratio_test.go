package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLogWelchByHand(t *testing.T) {
	// ln a = {1, 3}: mean 2, variance 2; ln b = {0, 2}: mean 1, variance 2.
	// d = 1, SE = √(2/2 + 2/2) = √2, t = 1/√2; Welch df = (1+1)²/(1/1+1/1) = 2.
	// Student's t with 2 df has the closed-form tail: P(|T| > t) =
	// 1 − t/√(2+t²) = 1 − √0.5/√2.5 = 1 − 1/√5 = 0.552786. The interval is
	// exp(1 ∓ 4.302653·√2) = exp(−5.084913), exp(7.084913) = 0.0061897, 1193.768;
	// the ratio of geometric means e.
	a := []float64{math.E, math.Exp(3)}
	b := []float64{1, math.Exp(2)}
	r, err := LogWelch(a, b)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "ratio", r.Ratio, math.E, 1e-12)
	near(t, "t", r.T, 1/math.Sqrt2, 1e-12)
	near(t, "df", r.DF, 2, 1e-12)
	near(t, "p", r.P, 1-1/math.Sqrt(5), 1e-9)
	near(t, "low", r.CILow, 0.006189693, 1e-6)
	near(t, "high", r.CIHigh, 1193.767850310, 1e-9)
	// Swapping the samples inverts the ratio and its interval, same p.
	s, _ := LogWelch(b, a)
	near(t, "swapped ratio", s.Ratio, 1/math.E, 1e-12)
	near(t, "swapped low", s.CILow, 1/r.CIHigh, 1e-9)
	near(t, "swapped p", s.P, r.P, 1e-12)
}

// The interval excludes 1 exactly when p < 0.05: the two come from one t.
// The old suite's delta-method interval beside a raw-mean Welch p broke this
// (5.70× [1.42, 22.89] with p 0.08).
func TestLogWelchIntervalAgreesWithP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[bool]int{}
	for i := 0; i < 2000; i++ {
		draw := func(mu float64) []float64 {
			xs := make([]float64, 2+rng.IntN(5))
			for j := range xs {
				xs[j] = math.Exp(mu + rng.NormFloat64()*(0.1+rng.Float64()))
			}
			return xs
		}
		a, b := draw(rng.Float64()*3), draw(0)
		r, err := LogWelch(a, b)
		if err != nil {
			t.Fatal(err)
		}
		excl := r.CILow > 1 || r.CIHigh < 1
		sig := r.P < 1-Confidence
		if math.Abs(r.P-(1-Confidence)) < 1e-9 {
			continue // on the boundary both are a coin toss of rounding
		}
		if excl != sig {
			t.Fatalf("a %v b %v: interval [%g, %g] but p %g", a, b, r.CILow, r.CIHigh, r.P)
		}
		seen[sig]++
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("the draws never/always reached significance (%v): the check proved nothing", seen)
	}
}

func TestLogWelchRefuses(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want string
	}{
		{[]float64{1}, []float64{1, 2}, "numerator needs two values"},
		{[]float64{1, 2}, []float64{1, 0}, "denominator's value 1 is 0"},
		{[]float64{-1, 2}, []float64{1, 2}, "numerator's value 0 is -1"},
	} {
		_, err := LogWelch(c.a, c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LogWelch(%v, %v) = %v, want an error with %q", c.a, c.b, err, c.want)
		}
	}
	// No spread: equal samples p 1, different ones p 0, the interval a point.
	r, err := LogWelch([]float64{2, 2}, []float64{1, 1})
	if err != nil || r.Ratio != 2 || r.P != 0 || r.CILow != 2 || r.CIHigh != 2 {
		t.Errorf("constant samples: %+v %v, want ratio 2, p 0, interval [2, 2]", r, err)
	}
	r, _ = LogWelch([]float64{2, 2}, []float64{2, 2})
	if r.Ratio != 1 || r.P != 1 {
		t.Errorf("equal constant samples: %+v, want ratio 1, p 1", r)
	}
}

func TestCohensD(t *testing.T) {
	// a = {1, 3}: mean 2, var 2; b = {0, 2}: mean 1, var 2; pooled √2.
	near(t, "d", CohensD([]float64{1, 3}, []float64{0, 2}), 1/math.Sqrt2, 1e-12)
	if d := CohensD([]float64{1, 1}, []float64{2, 2}); d != 0 {
		t.Errorf("no spread: d = %g, want 0", d)
	}
}

func TestModelError(t *testing.T) {
	// The one sign: a model that says 2 s where 4 s were measured is −50 %;
	// one that says 6 s is +50 %.
	for _, c := range []struct {
		modeled, measured, want float64
		ok                      bool
	}{{2, 4, -0.5, true}, {6, 4, 0.5, true}, {0, 0, 0, true}, {1, 0, 0, false}, {0, 4, -1, true}} {
		got, ok := ModelError(c.modeled, c.measured)
		if got != c.want || ok != c.ok {
			t.Errorf("ModelError(%g, %g) = %g, %v, want %g, %v", c.modeled, c.measured, got, ok, c.want, c.ok)
		}
	}
	if d, ok := RelDiff(4, 5); d != 0.25 || !ok {
		t.Errorf("RelDiff(4, 5) = %g %v, want 0.25 true", d, ok)
	}
}

func TestMeasuredBand(t *testing.T) {
	// Modeled 1, tolerance 15 %: 1/1.15 = 0.869565 and 1/0.85 = 1.176471,
	// where ModelError is (1 − 1/1.15)·1.15 = +0.15 and (1 − 1/0.85)·0.85 =
	// −0.15.
	lo, hi := MeasuredBand(1, 0.15)
	near(t, "lo", lo, 0.869565217, 1e-8)
	near(t, "hi", hi, 1.176470588, 1e-8)
	for _, c := range []struct{ meas, want float64 }{{lo, 0.15}, {hi, -0.15}} {
		e, _ := ModelError(1, c.meas)
		near(t, "error at the band's edge", e, c.want, 1e-12)
	}
	// Inside the band, |error| ≤ tol; just outside, above it.
	for _, m := range []float64{lo * 1.0001, 1, hi * 0.9999} {
		if e, _ := ModelError(1, m); math.Abs(e) > 0.15 {
			t.Errorf("measured %g inside the band has error %g", m, e)
		}
	}
	for _, m := range []float64{lo * 0.9999, hi * 1.0001} {
		if e, _ := ModelError(1, m); math.Abs(e) <= 0.15 {
			t.Errorf("measured %g outside the band has error %g", m, e)
		}
	}
}
