package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.9g, want %.9g", what, got, want)
	}
}

// t(0.975) from a table of Student's t: 3 degrees of freedom 3.182446;
// 2 degrees of freedom has the closed form (2p−1)/√(2p(1−p)) at p = 0.975,
// 0.95/√0.04875 = 4.302653.
const t3, t2 = 3.182446305284263, 4.302652729911275

func TestSummarizeByHand(t *testing.T) {
	// {1, 2, 3, 4}: mean 2.5; squared deviations 2.25+0.25+0.25+2.25 = 5,
	// s = √(5/3) = 1.290994; the empirical median of an even count is the
	// lower middle sample, 2; p95 and p99 are the largest, 4.
	xs := []float64{4, 1, 3, 2}
	s := Summarize(xs, Linear)
	if s.N != 4 || s.Min != 1 || s.Max != 4 || s.P50 != 2 || s.P95 != 4 || s.P99 != 4 {
		t.Errorf("n, min, p50, p95, p99, max = %d %g %g %g %g %g, want 4 1 2 4 4 4", s.N, s.Min, s.P50, s.P95, s.P99, s.Max)
	}
	if xs[0] != 4 {
		t.Errorf("Summarize sorted its input: %v", xs)
	}
	near(t, "mean", s.Mean, 2.5, 1e-12)
	near(t, "std", s.Std, math.Sqrt(5.0/3), 1e-12)
	// Linear: 2.5 ± t3·1.290994/√4 = 2.5 ± 2.054260.
	near(t, "linear low", s.CILow, 0.445739743, 1e-8)
	near(t, "linear high", s.CIHigh, 4.554260257, 1e-8)
	if s.CIScale != "linear" || s.CIClipped {
		t.Errorf("scale %q clipped %v, want linear, false", s.CIScale, s.CIClipped)
	}
	// Positive: k = exp(t3·1.290994/(2.5·2)) = exp(0.821704) = 2.274372;
	// 2.5/k = 1.099204, 2.5·k = 5.685931.
	p := Summarize(xs, Positive)
	near(t, "log low", p.CILow, 1.099204382, 1e-8)
	near(t, "log high", p.CIHigh, 5.685930753, 1e-8)
	if p.CIScale != "log" {
		t.Errorf("scale %q, want log", p.CIScale)
	}
}

func TestSummarizeFractionByHand(t *testing.T) {
	// {0.9, 1, 1}: mean 0.966667, s = 0.1/√3 = 0.057735. The t interval
	// 0.966667 ± t2·0.057735/√3 = ± 0.143422 passes 1 (1.110088); on the
	// logit scale: logit(0.966667) = ln 29 = 3.367296, its SE
	// 0.057735/√3/(0.966667·0.033333) = 1.034483, h = t2·1.034483 = 4.451020,
	// expit(3.367296 ∓ 4.451020) = 0.252802 and 0.999598.
	xs := []float64{0.9, 1, 1}
	l := Summarize(xs, Linear)
	near(t, "linear high", l.CIHigh, 1.110088424, 1e-8)
	f := Summarize(xs, Fraction)
	near(t, "logit low", f.CILow, 0.252801887, 1e-8)
	near(t, "logit high", f.CIHigh, 0.999597863, 1e-8)
	if f.CIClipped || f.CIHigh > 1 {
		t.Errorf("fraction interval [%g, %g] clipped %v: want inside [0, 1], not clipped", f.CILow, f.CIHigh, f.CIClipped)
	}
	// The same in percent: Bounded(0, 100) is the same interval × 100.
	pc := Summarize([]float64{90, 100, 100}, Bounded(0, 100))
	near(t, "percent low", pc.CILow, 25.2801887, 1e-8)
	near(t, "percent high", pc.CIHigh, 99.9597863, 1e-8)
	// Every sample on the bound: no spread, the interval is the bound itself.
	one := Summarize([]float64{1, 1, 1}, Fraction)
	if one.CILow != 1 || one.CIHigh != 1 || one.CIClipped {
		t.Errorf("all ones: [%g, %g] clipped %v, want [1, 1] unclipped", one.CILow, one.CIHigh, one.CIClipped)
	}
	// Samples beyond the bound (a sampler's rounding): the mean is above 1,
	// the t interval is clipped to [lo, 1] and says so.
	over := Summarize([]float64{1.02, 1.04}, Fraction)
	if over.CIHigh != 1 || !over.CIClipped {
		t.Errorf("above the bound: high %g clipped %v, want 1, true", over.CIHigh, over.CIClipped)
	}
}

func TestPositiveIntervalNeverNegative(t *testing.T) {
	// Three latencies as the suite saw them at n = 3 with one outlier: the t
	// interval of the mean goes below 0; the log-scale one cannot.
	xs := []float64{0.002, 0.003, 0.09}
	if l := Summarize(xs, Linear); l.CILow >= 0 {
		t.Fatalf("the example should have a negative t interval, got low %g", l.CILow)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		n := 2 + rng.IntN(5)
		ys := make([]float64, n)
		for j := range ys {
			ys[j] = math.Exp(rng.NormFloat64() * 3)
		}
		s := Summarize(ys, Positive)
		if !(s.CILow > 0) || !(s.CILow <= s.Mean && s.Mean <= s.CIHigh) {
			t.Fatalf("%v: interval [%g, %g] around mean %g: want 0 < low ≤ mean ≤ high", ys, s.CILow, s.CIHigh, s.Mean)
		}
	}
}

func TestSummarizeSmall(t *testing.T) {
	if s := Summarize(nil, Positive); s.N != 0 || s.Mean != 0 {
		t.Errorf("empty: %+v, want zero", s)
	}
	s := Summarize([]float64{3}, Positive)
	if s.N != 1 || s.Mean != 3 || s.Std != 0 || s.CILow != 3 || s.CIHigh != 3 || s.P99 != 3 {
		t.Errorf("one sample: %+v, want every figure 3, std 0", s)
	}
}

func TestPercentile(t *testing.T) {
	// 10 samples 1..10 (unsorted): the empirical p-quantile is the smallest
	// sample with at least 10p samples at or below it: p=0.5 → 5, p=0.95 →
	// 10, p=0.1 → 1, p=0.11 → 2.
	xs := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	for _, c := range []struct{ p, want float64 }{{0.5, 5}, {0.95, 10}, {0.1, 1}, {0.11, 2}, {0, 1}, {1, 10}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("Percentile(1..10, %g) = %g, want %g", c.p, got, c.want)
		}
	}
	if xs[0] != 10 {
		t.Errorf("Percentile sorted its input")
	}
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("Median(3,1,2) = %g, want 2", m)
	}
	if !math.IsNaN(Median(nil)) {
		t.Errorf("Median(nil) should be NaN")
	}
}

// Weighted percentiles by hand: samples 1, 2, 3 with weights 1, 1, 2 — a
// fraction 0.5 of the weight (2 of 4) is reached at 2, 0.51 only at 3.
func TestWeightedPercentile(t *testing.T) {
	xs, ws := []float64{1, 2, 3}, []float64{1, 1, 2}
	if got := WeightedPercentile(xs, ws, 0.5); got != 2 {
		t.Errorf("p50 = %g, want 2", got)
	}
	if got := WeightedPercentile(xs, ws, 0.51); got != 3 {
		t.Errorf("p51 = %g, want 3", got)
	}
	if got := WeightedPercentile(xs, nil, 0.5); got != Percentile(xs, 0.5) {
		t.Errorf("unweighted p50 = %g, want Percentile's %g", got, Percentile(xs, 0.5))
	}
	// mean (1+2+3·2)/4 = 2.25; variance (1.25² + 0.25² + 2·0.75²)/4 = 0.6875.
	m, s := PopulationMeanStd(xs, ws)
	if math.Abs(m-2.25) > 1e-12 || math.Abs(s-math.Sqrt(0.6875)) > 1e-12 {
		t.Errorf("mean %g std %g", m, s)
	}
}
