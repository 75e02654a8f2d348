package suite

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/stats"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.9g, want %.9g (±%g)", what, got, want, tol)
	}
}

// The fixed sample a = {1,2,3,4,5} (reference) and b = {2,4,6,8,10} = 2a.
//
//	a: mean 3, sample std √2.5 = 1.58113883, median 3, min 1, max 5.
//	   Latency is positive: the interval of the mean is on the log scale,
//	   3·exp(∓t(0.975, 4)·1.58113883/(3·√5)) = 3·exp(∓2.77644511·0.23570226)
//	   = 3·exp(∓0.65441439) = [1.55923903, 5.77204638].
//	Log-scale Welch: ln b = ln 2 + ln a, so both log samples have the
//	   variance of ln{1..5}: mean ln(120)/5 = 0.95749835, variance
//	   0.40387225. SE = √(2·0.40387225/5) = 0.40193146; Welch df =
//	   (2v/5)²/(2(v/5)²/4) = 8 exactly; t = −ln 2/0.40193146 = −1.72454075.
//	   Speedup (ratio of geometric means) exactly 0.5; p = 2(1 − F_t(1.72454; 8))
//	   = 0.12289606 (Simpson's rule on the t density, a separate script; a t
//	   table brackets it: t(0.95, 8) = 1.860 > 1.7245 > t(0.90, 8) = 1.397,
//	   so 0.1 < p < 0.2); interval 0.5·exp(∓t(0.975, 8)·SE) =
//	   0.5·exp(∓2.30600414·0.40193146) = [0.19789815, 1.26327610], which
//	   contains 1 as p > 0.05 says.
//	Cohen's d = (3 − 6)/√((4·2.5 + 4·10)/8) = −3/2.5 = −1.2.
func TestStatsHandDerived(t *testing.T) {
	a := []float64{5, 1, 4, 2, 3} // order must not matter
	b := []float64{2, 4, 6, 8, 10}
	s := stats.Summarize(a, stats.Positive)
	if s.N != 5 || s.Min != 1 || s.Max != 5 || s.P50 != 3 {
		t.Errorf("summary: %+v", s)
	}
	near(t, "mean", s.Mean, 3, 1e-12)
	near(t, "std", s.Std, 1.58113883, 1e-8)
	near(t, "ci low", s.CILow, 1.55923903, 1e-7)
	near(t, "ci high", s.CIHigh, 5.77204638, 1e-7)
	c, err := Compare("a", a, b)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "speedup", c.Speedup, 0.5, 1e-12)
	near(t, "welch t", c.WelchT, -1.72454075, 1e-8)
	near(t, "welch df", c.WelchDF, 8, 1e-9)
	near(t, "p", c.PValue, 0.12289606, 1e-7)
	near(t, "speedup ci low", c.SpeedupCILow, 0.19789815, 1e-7)
	near(t, "speedup ci high", c.SpeedupCIHigh, 1.26327610, 1e-7)
	near(t, "cohen d", c.CohensD, -1.2, 1e-12)
	if _, err := Compare("a", a[:1], b); err == nil || !strings.Contains(err.Error(), "compare with a") {
		t.Errorf("one run: %v, want an error naming the reference", err)
	}
}

func TestAnalyzeCompleteness(t *testing.T) {
	s, err := Load("quick")
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{
		{Cell: "local/smoke", Run: 0, LatencyS: 1, ModeledS: 1.5}, {Cell: "local/smoke", Run: 1, LatencyS: 2, ModeledS: 1.5}, {Cell: "local/smoke", Run: 2, LatencyS: 3, ModeledS: 1.5},
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
	// naive's runs are twice local's (the warm-up's 9 is not a sample): the
	// ratio of geometric means is 0.5.
	near(t, "naive vs local", naive.VsLocal.Speedup, 0.5, 1e-12)
	// The model said 1.5 s where local measured a mean of 2 s: the error is
	// (modeled − measured)/measured = (1.5 − 2)/2 = −25 %, the sign of run
	// and collectives --measured.
	near(t, "local model error", r.Cells[0].ModelErr, -0.25, 1e-12)
	if _, err := Analyze(s, append(recs, Record{Cell: "local/smoke", Run: 1, LatencyS: 5})); err == nil {
		t.Error("a duplicate run: want an error")
	}
}
