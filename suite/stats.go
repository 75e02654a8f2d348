package suite

import (
	"fmt"

	"github.com/partbench/partbench/stats"
)

// Confidence is the level of every interval (stats').
const Confidence = stats.Confidence

// Comparison holds a cell against a reference cell of the same workload.
type Comparison struct {
	Reference string `json:"reference"`
	// Speedup is the reference's latency over this one's (> 1: this one is
	// faster) as stats.LogWelch infers it: the ratio of geometric means,
	// its interval and the p-value all from one Welch t on log latencies,
	// so the interval excludes 1 exactly when PValue < 1 − Confidence.
	Speedup       float64 `json:"speedup"`
	SpeedupCILow  float64 `json:"speedup_ci95_low"`
	SpeedupCIHigh float64 `json:"speedup_ci95_high"`
	WelchT        float64 `json:"welch_t"`
	WelchDF       float64 `json:"welch_df"`
	PValue        float64 `json:"p_value"`
	// CohensD is (reference mean − this mean) / pooled standard deviation.
	CohensD float64 `json:"cohens_d"`
}

// Compare is cell b against reference a (both samples of latency).
func Compare(refName string, a, b []float64) (Comparison, error) {
	r, err := stats.LogWelch(a, b)
	if err != nil {
		return Comparison{}, fmt.Errorf("compare with %s: %w", refName, err)
	}
	return Comparison{Reference: refName, Speedup: r.Ratio, SpeedupCILow: r.CILow, SpeedupCIHigh: r.CIHigh,
		WelchT: r.T, WelchDF: r.DF, PValue: r.P, CohensD: stats.CohensD(a, b)}, nil
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
	Complete bool          `json:"complete"`
	LatencyS stats.Summary `json:"latency_s"`
	NetBytes stats.Summary `json:"net_bytes"`
	// ModelBytes is the model's payload for the same unit (exact).
	ModelBytes float64       `json:"model_bytes"`
	Util       stats.Summary `json:"util"`
	UtilSource string        `json:"util_source"`
	// ModeledS is sim's latency; ModelErr is stats.ModelError,
	// (modeled − measured mean) / measured mean, the sign every command uses.
	ModeledS   float64     `json:"modeled_latency_s"`
	ModelErr   float64     `json:"model_error"`
	Mismatches int         `json:"byte_mismatches"`
	VsLocal    *Comparison `json:"vs_local,omitempty"`
	VsNaive    *Comparison `json:"vs_naive,omitempty"`
}

// ResultsSchema names the layout of a suite's results.json.
const ResultsSchema = "partbench.suite/v1"

// Results are a suite's statistics (results.json).
type Results struct {
	// Schema is ResultsSchema (results.json).
	Schema     string       `json:"schema"`
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
	res := &Results{Schema: ResultsSchema, Spec: s.Name, SpecHash: s.Hash(), Hardware: s.Hardware, Link: s.Link, Backend: s.Backend, Warmup: s.Warmup, Runs: s.Runs,
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
			cr.LatencyS = stats.Summarize(lat(rs), stats.Positive)
			cr.NetBytes = stats.Summarize(col(func(r Record) float64 { return r.NetBytes }), stats.Positive)
			cr.Util = stats.Summarize(col(func(r Record) float64 { return r.Util }), stats.Fraction)
			cr.ModelBytes, cr.ModeledS, cr.UtilSource = rs[0].ModelBytes, rs[0].ModeledS, rs[0].UtilSource
			if cr.ModeledS > 0 {
				cr.ModelErr, _ = stats.ModelError(cr.ModeledS, cr.LatencyS.Mean)
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
