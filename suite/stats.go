package suite

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Confidence is the level of every interval.
const Confidence = 0.95

// Stats describe one sample.
type Stats struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// CILow and CIHigh bound the mean: mean ± t(0.975, n−1)·std/√n.
	CILow  float64 `json:"ci95_low"`
	CIHigh float64 `json:"ci95_high"`
}

// Describe is xs's statistics: gonum's mean and sample standard deviation,
// its empirical 0.5-quantile as the median (the project's one definition),
// and Student's t interval of the mean.
func Describe(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	st := Stats{N: len(s), Min: s[0], Max: s[len(s)-1], Median: stat.Quantile(0.5, stat.Empirical, s, nil)}
	st.Mean, st.Std = stat.MeanStdDev(s, nil)
	st.CILow, st.CIHigh = st.Mean, st.Mean
	if len(s) < 2 {
		st.Std = 0
		return st
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(s) - 1)}.Quantile(1 - (1-Confidence)/2)
	h := t * stat.StdErr(st.Std, float64(len(s)))
	st.CILow, st.CIHigh = st.Mean-h, st.Mean+h
	return st
}

// Comparison holds a cell against a reference cell of the same workload.
type Comparison struct {
	Reference string `json:"reference"`
	// Speedup is reference mean ÷ this mean (> 1: this one is faster), with
	// an interval from the delta method on the log ratio using Welch's
	// degrees of freedom.
	Speedup       float64 `json:"speedup"`
	SpeedupCILow  float64 `json:"speedup_ci95_low"`
	SpeedupCIHigh float64 `json:"speedup_ci95_high"`
	// WelchT, WelchDF and PValue are Welch's two-sided t-test of equal means.
	WelchT  float64 `json:"welch_t"`
	WelchDF float64 `json:"welch_df"`
	PValue  float64 `json:"p_value"`
	// CohensD is (reference mean − this mean) / pooled standard deviation.
	CohensD float64 `json:"cohens_d"`
}

// Compare is cell b against reference a (both samples of latency).
func Compare(refName string, a, b []float64) (Comparison, error) {
	if len(a) < 2 || len(b) < 2 {
		return Comparison{}, fmt.Errorf("compare with %s: need two runs each (got %d and %d)", refName, len(a), len(b))
	}
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	na, nb := float64(len(a)), float64(len(b))
	c := Comparison{Reference: refName, Speedup: ma / mb}
	sa, sb := va/na, vb/nb
	se := math.Sqrt(sa + sb)
	// Welch–Satterthwaite degrees of freedom.
	c.WelchDF = (sa + sb) * (sa + sb) / (sa*sa/(na-1) + sb*sb/(nb-1))
	if se > 0 {
		c.WelchT = (ma - mb) / se
		td := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: c.WelchDF}
		c.PValue = 2 * td.Survival(math.Abs(c.WelchT))
		// Var(ln ā) ≈ Var(ā)/ā²: the log ratio's standard error.
		sl := math.Sqrt(sa/(ma*ma) + sb/(mb*mb))
		h := td.Quantile(1-(1-Confidence)/2) * sl
		c.SpeedupCILow, c.SpeedupCIHigh = c.Speedup*math.Exp(-h), c.Speedup*math.Exp(h)
	} else {
		c.WelchDF, c.SpeedupCILow, c.SpeedupCIHigh = 0, c.Speedup, c.Speedup
		c.PValue = 1
		if ma != mb {
			c.PValue = 0
		}
	}
	pooled := math.Sqrt(((na-1)*va + (nb-1)*vb) / (na + nb - 2))
	if pooled > 0 {
		c.CohensD = (ma - mb) / pooled
	}
	return c, nil
}

// CellResult is one cell's statistics.
type CellResult struct {
	Cell     string `json:"cell"`
	Baseline string `json:"baseline"`
	Seed     string `json:"seed_name,omitempty"`
	Workload string `json:"workload"`
	Kind     string `json:"kind"`
	Mode     string `json:"mode"`
	// Complete is false when the log holds fewer runs than the spec asks.
	Complete bool  `json:"complete"`
	LatencyS Stats `json:"latency_s"`
	NetBytes Stats `json:"net_bytes"`
	// ModelBytes is the model's payload for the same unit (exact).
	ModelBytes float64 `json:"model_bytes"`
	Util       Stats   `json:"util"`
	UtilSource string  `json:"util_source"`
	// ModeledS is sim's latency; ModelErr = (measured mean − modeled) / modeled.
	ModeledS   float64     `json:"modeled_latency_s"`
	ModelErr   float64     `json:"model_error"`
	Mismatches int         `json:"byte_mismatches"`
	VsLocal    *Comparison `json:"vs_local,omitempty"`
	VsNaive    *Comparison `json:"vs_naive,omitempty"`
}

// Results are a suite's statistics (results.json).
type Results struct {
	Spec       string       `json:"spec"`
	SpecHash   string       `json:"spec_hash"`
	Hardware   string       `json:"modeled_hardware"`
	Link       string       `json:"link"`
	Backend    string       `json:"backend"`
	Warmup     int          `json:"warmup"`
	Runs       int          `json:"runs"`
	Confidence float64      `json:"confidence"`
	Complete   bool         `json:"complete"`
	Cells      []CellResult `json:"cells"`
	// Baselines and Workloads keep the spec's order for tables and figures.
	Baselines []Baseline `json:"baselines"`
	Workloads []Workload `json:"workloads"`
}

// Analyze computes every cell's statistics and its comparisons with the
// first local-mode baseline and the first naive-mode baseline of the same
// workload.
func Analyze(s *Spec, recs []Record) (*Results, error) {
	m, err := Measured(recs)
	if err != nil {
		return nil, err
	}
	by := map[string][]Record{}
	for _, r := range m {
		by[r.Cell] = append(by[r.Cell], r)
	}
	res := &Results{Spec: s.Name, SpecHash: s.Hash(), Hardware: s.Hardware, Link: s.Link, Backend: s.Backend, Warmup: s.Warmup, Runs: s.Runs,
		Confidence: Confidence, Complete: true, Baselines: s.Baselines, Workloads: s.Workloads}
	ref := func(mode string) string {
		for _, b := range s.Baselines {
			if b.Mode == mode {
				return b.Name
			}
		}
		return ""
	}
	local, naive := ref("local"), ref("naive")
	lat := func(rs []Record) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = r.LatencyS
		}
		return out
	}
	for _, c := range s.RunCells() {
		rs := by[c.ID()]
		cr := CellResult{Cell: c.ID(), Baseline: c.Baseline.Name, Seed: c.Baseline.Seed, Workload: c.Workload.Name, Kind: c.Workload.Kind,
			Mode: c.Baseline.RecordMode(), Complete: len(rs) >= s.Runs}
		res.Complete = res.Complete && cr.Complete
		if len(rs) > 0 {
			col := func(f func(Record) float64) []float64 {
				out := make([]float64, len(rs))
				for i, r := range rs {
					out[i] = f(r)
				}
				return out
			}
			cr.LatencyS = Describe(lat(rs))
			cr.NetBytes = Describe(col(func(r Record) float64 { return r.NetBytes }))
			cr.Util = Describe(col(func(r Record) float64 { return r.Util }))
			cr.ModelBytes, cr.ModeledS, cr.UtilSource = rs[0].ModelBytes, rs[0].ModeledS, rs[0].UtilSource
			if cr.ModeledS > 0 {
				cr.ModelErr = (cr.LatencyS.Mean - cr.ModeledS) / cr.ModeledS
			}
			for _, r := range rs {
				if len(r.Mismatches) > 0 {
					cr.Mismatches++
				}
			}
		}
		for _, p := range []struct {
			name string
			dst  **Comparison
		}{{local, &cr.VsLocal}, {naive, &cr.VsNaive}} {
			if p.name == "" || p.name == c.Baseline.Name {
				continue
			}
			other := by[p.name+"/"+c.Workload.Name]
			if len(other) < 2 || len(rs) < 2 {
				continue
			}
			cmp, err := Compare(p.name, lat(other), lat(rs))
			if err != nil {
				return nil, err
			}
			*p.dst = &cmp
		}
		res.Cells = append(res.Cells, cr)
	}
	return res, nil
}
