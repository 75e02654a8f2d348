package stats

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Confidence is the level of every interval partbench reports.
const Confidence = 0.95

// Scale says what values a quantity can take, and so on which scale its
// interval is computed, so that the interval never leaves them.
type Scale struct {
	kind   scaleKind
	lo, hi float64
}

type scaleKind int

const (
	linear scaleKind = iota
	positive
	bounded
)

// Linear is a quantity of any sign (a difference, an overhead that can be
// negative): Student's t interval of the mean, mean ± t·s/√n.
var Linear = Scale{}

// Positive is a quantity > 0 (a latency, bytes, a rate): the interval of
// the mean is taken on the log scale, mean·exp(±t·s/(mean·√n)) (the delta
// method: the standard error of ln(mean) is s/(mean·√n)), so it never
// reaches 0 and is symmetric in ratio around the mean.
var Positive = Scale{kind: positive}

// Fraction is a quantity in [0, 1] (a utilization): Bounded(0, 1).
var Fraction = Bounded(0, 1)

// Bounded is a quantity in [lo, hi] (a utilization in [0, 1] or
// [0, 100] %): the interval is taken on the logit scale of
// u = (x − lo)/(hi − lo), logit(ū) ± t·s_u/(ū(1−ū)√n) (the delta method),
// so it stays inside (lo, hi). A mean on a bound (every sample there, or
// samples outside the bounds) falls back to the t interval clipped to the
// bounds, and the Summary says it was clipped.
func Bounded(lo, hi float64) Scale { return Scale{kind: bounded, lo: lo, hi: hi} }

// String names the scale the interval is computed on (the JSON's
// ci95_scale).
func (s Scale) String() string {
	switch s.kind {
	case positive:
		return "log"
	case bounded:
		return fmt.Sprintf("logit[%g,%g]", s.lo, s.hi)
	}
	return "linear"
}

// Summary describes one sample. Every command that reports a statistic of
// repeated measurements reports this one.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	// Std is the sample standard deviation (n − 1); 0 for one sample.
	Std float64 `json:"std"`
	Min float64 `json:"min"`
	// P50, P95 and P99 are Percentile's: P50 is the median.
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	// CILow and CIHigh bound the mean at Confidence on CIScale's scale
	// (equal to the mean for fewer than two samples).
	CILow   float64 `json:"ci95_low"`
	CIHigh  float64 `json:"ci95_high"`
	CIScale string  `json:"ci95_scale,omitempty"`
	// CIClipped is set when the interval had to be clipped to the scale's
	// bounds (a figure draws and labels such a bound).
	CIClipped bool `json:"ci95_clipped,omitempty"`
}

// Summarize describes xs (not modified): gonum's mean and sample standard
// deviation, Percentile's quantiles, and the interval of the mean on sc's
// scale.
func Summarize(xs []float64, sc Scale) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	st := Summary{N: len(s), Min: s[0], Max: s[len(s)-1],
		P50: Percentile(s, 0.50), P95: Percentile(s, 0.95), P99: Percentile(s, 0.99), CIScale: sc.String()}
	st.Mean = stat.Mean(s, nil)
	st.CILow, st.CIHigh = st.Mean, st.Mean
	if len(s) < 2 {
		return st
	}
	st.Std = stat.StdDev(s, nil)
	st.CILow, st.CIHigh, st.CIClipped = meanInterval(st.Mean, st.Std, len(s), sc)
	return st
}

// tCrit is Student's t quantile of the two-sided Confidence interval.
func tCrit(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-Confidence)/2)
}

// meanInterval is the interval of a mean m of n samples with standard
// deviation sd, on sc's scale.
func meanInterval(m, sd float64, n int, sc Scale) (lo, hi float64, clipped bool) {
	t := tCrit(float64(n - 1))
	se := sd / math.Sqrt(float64(n))
	switch sc.kind {
	case positive:
		if m > 0 {
			k := math.Exp(t * se / m)
			return m / k, m * k, false
		}
		// Not a positive sample after all: the t interval, clipped at 0.
		lo, hi = m-t*se, m+t*se
		if lo < 0 {
			return 0, math.Max(hi, 0), true
		}
		return lo, hi, false
	case bounded:
		w := sc.hi - sc.lo
		u, su := (m-sc.lo)/w, se/w
		if u > 0 && u < 1 && su > 0 {
			c := math.Log(u / (1 - u))
			h := t * su / (u * (1 - u))
			return sc.lo + w*expit(c-h), sc.lo + w*expit(c+h), false
		}
		lo, hi = m-t*se, m+t*se
		if lo < sc.lo {
			lo, clipped = sc.lo, true
		}
		if hi > sc.hi {
			hi, clipped = sc.hi, true
		}
		return lo, hi, clipped
	}
	return m - t*se, m + t*se, false
}

func expit(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Percentile is the p-quantile (p in [0, 1]) of xs, partbench's one
// definition of a percentile and a median: gonum's empirical quantile, the
// smallest sample with at least a fraction p of the samples at or below it
// (for an even count the median is the lower middle sample, so it is always
// one of the samples). xs is not modified; NaN when it is empty.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	if !sort.Float64sAreSorted(xs) {
		xs = append([]float64(nil), xs...)
		sort.Float64s(xs)
	}
	return stat.Quantile(p, stat.Empirical, xs, nil)
}

// Median is Percentile(xs, 0.5).
func Median(xs []float64) float64 { return Percentile(xs, 0.5) }

// WeightedPercentile is Percentile with a weight per sample: the smallest
// sample with at least a fraction p of the total weight at or below it (w
// nil: every weight 1, which is Percentile). xs must be sorted ascending,
// ws in the same order. NaN when xs is empty.
func WeightedPercentile(xs, ws []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stat.Quantile(p, stat.Empirical, xs, ws)
}

// PopulationMeanStd is the weighted mean and population (n, not n − 1)
// standard deviation of xs (ws nil: unweighted), as numpy's mean and std
// report them, for figures that follow a tool that uses them (vLLM's
// benchmark_serving).
func PopulationMeanStd(xs, ws []float64) (mean, std float64) {
	return stat.PopMeanStdDev(xs, ws)
}
