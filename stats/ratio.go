package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Ratio is the inference for a ratio of two positive samples (a speedup:
// reference latency over this one): Welch's t-test on the logs of the
// values. The ratio is that of the geometric means, exp(mean ln a − mean
// ln b); the interval is exp of the log difference ± t·SE and the p-value
// comes from the same t and degrees of freedom, so the interval excludes 1
// exactly when P < 1 − Confidence.
type Ratio struct {
	Ratio  float64 `json:"ratio"`
	CILow  float64 `json:"ci95_low"`
	CIHigh float64 `json:"ci95_high"`
	// T is the log difference over its Welch standard error, DF the
	// Welch–Satterthwaite degrees of freedom, P the two-sided p-value of
	// "equal geometric means".
	T  float64 `json:"welch_t"`
	DF float64 `json:"welch_df"`
	P  float64 `json:"p_value"`
}

// LogWelch is the Ratio of a over b. Both need two values at least, all
// positive.
func LogWelch(a, b []float64) (Ratio, error) {
	la, err := logs(a, "numerator")
	if err != nil {
		return Ratio{}, err
	}
	lb, err := logs(b, "denominator")
	if err != nil {
		return Ratio{}, err
	}
	ma, va := stat.MeanVariance(la, nil)
	mb, vb := stat.MeanVariance(lb, nil)
	na, nb := float64(len(la)), float64(len(lb))
	d := ma - mb
	r := Ratio{Ratio: math.Exp(d), CILow: math.Exp(d), CIHigh: math.Exp(d), P: 1}
	sa, sb := va/na, vb/nb
	if sa+sb == 0 {
		// No spread on either side: the logs differ or they do not.
		if d != 0 {
			r.P = 0
			r.T = math.Inf(int(math.Copysign(1, d)))
		}
		return r, nil
	}
	se := math.Sqrt(sa + sb)
	r.DF = (sa + sb) * (sa + sb) / (sa*sa/(na-1) + sb*sb/(nb-1))
	r.T = d / se
	td := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: r.DF}
	r.P = 2 * td.Survival(math.Abs(r.T))
	h := td.Quantile(1-(1-Confidence)/2) * se
	r.CILow, r.CIHigh = math.Exp(d-h), math.Exp(d+h)
	return r, nil
}

func logs(xs []float64, side string) ([]float64, error) {
	if len(xs) < 2 {
		return nil, fmt.Errorf("ratio: the %s needs two values at least (got %d)", side, len(xs))
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		if !(x > 0) || math.IsInf(x, 1) {
			return nil, fmt.Errorf("ratio: the %s's value %d is %g: a ratio on the log scale needs finite values > 0", side, i, x)
		}
		out[i] = math.Log(x)
	}
	return out, nil
}

// CohensD is the effect size (mean a − mean b) / pooled standard deviation;
// 0 when neither sample varies.
func CohensD(a, b []float64) float64 {
	if len(a) < 2 || len(b) < 2 {
		return 0
	}
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	na, nb := float64(len(a)), float64(len(b))
	pooled := math.Sqrt(((na-1)*va + (nb-1)*vb) / (na + nb - 2))
	if pooled == 0 {
		return 0
	}
	return (ma - mb) / pooled
}
