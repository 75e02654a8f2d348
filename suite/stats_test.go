package suite

import (
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.9g, want %.9g (±%g)", what, got, want, tol)
	}
}

// The fixed sample a = {1,2,3,4,5} (reference) and b = {2,4,6,8,10}.
//
//	a: mean 3, sample variance ((−2)²+(−1)²+0+1+2²)/4 = 2.5, std 1.58113883,
//	   median 3, min 1, max 5; 95 % CI 3 ± t(0.975, 4)·√(2.5/5)
//	   = 3 ± 2.77644511·0.70710678 = [1.03675684, 4.96324316].
//	b: mean 6, sample variance 10.
//	speedup of b vs a = 3/6 = 0.5.
//	Welch: se² = 2.5/5 + 10/5 = 2.5, t = (3−6)/√2.5 = −1.89736660,
//	   df = 2.5² / (0.5²/4 + 2²/4) = 6.25/1.0625 = 5.88235294.
//	   p = 2·(1 − F_t(1.8973666; 5.88235)) = 0.1075312 (Simpson's rule on the
//	   t density in a separate script; a t table brackets it: t(0.95, 5) =
//	   2.015 > 1.897 > t(0.90, 6) = 1.440, so 0.1 < p < 0.2).
//	Speedup CI: log-ratio se = √(0.5/3² + 2/6²) = 1/3, t(0.975, 5.88235) =
//	   2.45882371, so 0.5·exp(∓2.45882371/3) = [0.22030219, 1.13480488].
//	Cohen's d = (3 − 6)/√((4·2.5 + 4·10)/8) = −3/2.5 = −1.2.
func TestStatsHandDerived(t *testing.T) {
	a := []float64{5, 1, 4, 2, 3} // order must not matter
	b := []float64{2, 4, 6, 8, 10}
	s := Describe(a)
	if s.N != 5 || s.Min != 1 || s.Max != 5 || s.Median != 3 {
		t.Errorf("describe: %+v", s)
	}
	near(t, "mean", s.Mean, 3, 1e-12)
	near(t, "std", s.Std, 1.58113883, 1e-8)
	near(t, "ci low", s.CILow, 1.03675684, 1e-7)
	near(t, "ci high", s.CIHigh, 4.96324316, 1e-7)
	c, err := Compare("a", a, b)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "speedup", c.Speedup, 0.5, 1e-12)
	near(t, "welch t", c.WelchT, -1.89736660, 1e-8)
	near(t, "welch df", c.WelchDF, 5.88235294, 1e-8)
	near(t, "p", c.PValue, 0.1075312, 1e-6)
	near(t, "speedup ci low", c.SpeedupCILow, 0.22030219, 1e-6)
	near(t, "speedup ci high", c.SpeedupCIHigh, 1.13480488, 1e-6)
	near(t, "cohen d", c.CohensD, -1.2, 1e-12)
	if _, err := Compare("a", a[:1], b); err == nil {
		t.Error("one run: want an error")
	}
}

func TestAnalyzeCompleteness(t *testing.T) {
	s, err := Load("quick")
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{
		{Cell: "local/smoke", Run: 0, LatencyS: 1}, {Cell: "local/smoke", Run: 1, LatencyS: 2}, {Cell: "local/smoke", Run: 2, LatencyS: 3},
		{Cell: "naive/smoke", Run: 0, LatencyS: 2}, {Cell: "naive/smoke", Run: 1, LatencyS: 4}, {Cell: "naive/smoke", Run: 2, LatencyS: 6},
		{Cell: "naive/smoke", Run: 0, LatencyS: 9, Warmup: true},
	}
	r, err := Analyze(s, recs)
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete {
		t.Error("a log with 2 of 25 cells is complete")
	}
	naive := r.Cells[1]
	if naive.Cell != "naive/smoke" || !naive.Complete || naive.VsLocal == nil || naive.VsNaive != nil {
		t.Fatalf("naive/smoke: %+v", naive)
	}
	// local mean 2, naive mean 4 (the warm-up's 9 is not a sample): 0.5.
	near(t, "naive vs local", naive.VsLocal.Speedup, 0.5, 1e-12)
	if _, err := Analyze(s, append(recs, Record{Cell: "local/smoke", Run: 1, LatencyS: 5})); err == nil {
		t.Error("a duplicate run: want an error")
	}
}
