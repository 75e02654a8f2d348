package serving

import (
	"fmt"
	"github.com/partbench/partbench/stats"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Goodput is an SLO per request (vLLM's --goodput KEY:MS …): a request is
// good when every given bound holds; 0 means the bound is not set.
type Goodput struct {
	TTFTMs, TPOTMs, E2ELMs float64
}

// Set reports whether any bound is given.
func (g Goodput) Set() bool { return g.TTFTMs > 0 || g.TPOTMs > 0 || g.E2ELMs > 0 }

// ParseGoodput reads --goodput's "ttft:MS tpot:MS e2el:MS" pairs (any
// subset, space or comma separated).
func ParseGoodput(items []string) (Goodput, error) {
	var g Goodput
	for _, item := range items {
		for _, kv := range strings.FieldsFunc(item, func(r rune) bool { return r == ' ' || r == ',' }) {
			k, v, ok := strings.Cut(kv, ":")
			ms, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil || !(ms > 0) || math.IsInf(ms, 0) {
				return g, fmt.Errorf("--goodput: %q: want KEY:MS with KEY one of ttft, tpot, e2el and MS a number of milliseconds > 0", kv)
			}
			switch k {
			case "ttft":
				g.TTFTMs = ms
			case "tpot":
				g.TPOTMs = ms
			case "e2el":
				g.E2ELMs = ms
			default:
				return g, fmt.Errorf("--goodput: %q: KEY must be one of ttft, tpot, e2el (got %q)", kv, k)
			}
		}
	}
	return g, nil
}

// ParsePercentiles reads --metric-percentiles ("50,90,99"): each in (0, 100].
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(p > 0 && p <= 100) {
			return nil, fmt.Errorf("--metric-percentiles: %q: each must be a number in (0, 100]", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// Dist is one latency metric's summary in milliseconds, as benchmark_serving
// prints it.
type Dist struct {
	MeanMs, MedianMs, StdMs float64
	// Percentiles[i] is the Ps[i]-th percentile.
	Percentiles []float64
}

// Metrics are benchmark_serving's metrics of one run.
type Metrics struct {
	Completed            int
	Failed               int
	DurationS            float64
	TotalInputTokens     int
	TotalOutputTokens    int
	RequestThroughput    float64
	OutputThroughput     float64
	TotalTokenThroughput float64
	// RequestGoodput is good requests per second (NaN without an SLO).
	RequestGoodput float64
	Ps             []float64
	TTFT, TPOT     Dist
	ITL, E2EL      Dist
	Preemptions    int
	Swaps          int
	// MeanInSystem is ∫N(t)dt / duration; Little's law says it equals
	// RequestThroughput × mean E2EL (s).
	MeanInSystem float64
}

// Summarize computes the metrics of a run as benchmark_serving does:
// completed requests only; TPOT = (E2EL − TTFT)/(output − 1) for requests
// with more than one output token; ITL over every token after the first of
// every request; duration from the first send to the last finish.
func Summarize(res *Result, ps []float64, slo Goodput) Metrics {
	m := Metrics{Ps: ps, DurationS: res.DurationS, Preemptions: res.Preemptions, Swaps: res.Swaps, RequestGoodput: math.NaN()}
	var ttft, tpot, e2el []float64
	good := 0
	for _, r := range res.Requests {
		if r.Error != "" {
			m.Failed++
			continue
		}
		m.Completed++
		m.TotalInputTokens += r.InputLen
		m.TotalOutputTokens += r.OutputLen
		t := (r.FirstTokenS - r.SentS) * 1e3
		e := (r.EndS - r.SentS) * 1e3
		ttft = append(ttft, t)
		e2el = append(e2el, e)
		tp := 0.0
		if r.OutputLen > 1 {
			tp = (e - t) / float64(r.OutputLen-1)
			tpot = append(tpot, tp)
		}
		if (slo.TTFTMs == 0 || t <= slo.TTFTMs) && (slo.TPOTMs == 0 || tp <= slo.TPOTMs) && (slo.E2ELMs == 0 || e <= slo.E2ELMs) {
			good++
		}
	}
	if m.DurationS > 0 {
		m.RequestThroughput = float64(m.Completed) / m.DurationS
		m.OutputThroughput = float64(m.TotalOutputTokens) / m.DurationS
		m.TotalTokenThroughput = float64(m.TotalInputTokens+m.TotalOutputTokens) / m.DurationS
		m.MeanInSystem = res.InSystemS / m.DurationS
		if slo.Set() {
			m.RequestGoodput = float64(good) / m.DurationS
		}
	}
	itl := make([]float64, len(res.ITL.Value))
	for i, v := range res.ITL.Value {
		itl[i] = v * 1e3
	}
	m.TTFT = Summary(ttft, nil, ps)
	m.TPOT = Summary(tpot, nil, ps)
	m.ITL = Summary(itl, append([]float64(nil), res.ITL.Weight...), ps)
	m.E2EL = Summary(e2el, nil, ps)
	return m
}

// Summary is the one place a request distribution is summarized: package
// stats' weighted mean and population standard deviation (numpy's, as
// benchmark_serving reports) and its weighted percentiles
// (the smallest sample with at least p of the weight at or below it; the
// median is the 0.5 quantile). x and w are reordered. An empty sample
// gives zeros, as benchmark_serving prints for no data.
func Summary(x, w []float64, ps []float64) Dist {
	d := Dist{Percentiles: make([]float64, len(ps))}
	if len(x) == 0 {
		return d
	}
	if w == nil {
		sort.Float64s(x)
	} else {
		sort.Sort(byValue{x, w})
	}
	mean, std := stats.PopulationMeanStd(x, w)
	d.MeanMs, d.StdMs = mean, std
	d.MedianMs = stats.WeightedPercentile(x, w, 0.5)
	for i, p := range ps {
		d.Percentiles[i] = stats.WeightedPercentile(x, w, p/100)
	}
	return d
}

type byValue struct{ x, w []float64 }

func (b byValue) Len() int           { return len(b.x) }
func (b byValue) Less(i, j int) bool { return b.x[i] < b.x[j] }
func (b byValue) Swap(i, j int) {
	b.x[i], b.x[j] = b.x[j], b.x[i]
	b.w[i], b.w[j] = b.w[j], b.w[i]
}
