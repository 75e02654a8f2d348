package sim

import (
	"fmt"
	"math"
	"sort"

	"github.com/partbench/partbench/configs"
	"gonum.org/v1/gonum/optimize"
)

// MeasuredPoint is one published or user-measured inference result
// (`partbench model --measured FILE`): the batch and lengths it ran and
// whichever of TTFT, TPOT, end-to-end latency and token rate it reports
// (0: not reported). Batch, Input and Output 0 take the config's workload.
type MeasuredPoint struct {
	Source string `json:"source"` // file and line or key
	Batch  int    `json:"batch"`
	Input  int    `json:"input"`
	Output int    `json:"output"`
	// Requests > 0 marks a throughput run of that many requests served in
	// batches of Batch (vLLM benchmark_throughput); TokensTotal is the
	// tokens its rate counts (prompt and output). A latency run's rate is
	// batch × output tokens / E2E (gptSessionBenchmark's tokensPerSec).
	Requests    int     `json:"requests,omitempty"`
	TokensTotal float64 `json:"tokens_total,omitempty"`
	TTFTS       float64 `json:"ttft_s,omitempty"`
	TPOTS       float64 `json:"tpot_s,omitempty"`
	E2ES        float64 `json:"e2e_s,omitempty"`
	TokensPerS  float64 `json:"tokens_per_s,omitempty"`
}

// MeasuredRow is one metric of one point beside the model: RelErr is
// (modeled − measured) / measured; Term is what dominates the modeled
// number (host, launch, or the bottleneck bound of the phase).
type MeasuredRow struct {
	Point    int     `json:"point"`
	Source   string  `json:"source"`
	Batch    int     `json:"batch"`
	Input    int     `json:"input"`
	Output   int     `json:"output"`
	Metric   string  `json:"metric"` // ttft_s, tpot_s, e2e_s, tokens_per_s
	Measured float64 `json:"measured"`
	Modeled  float64 `json:"modeled"`
	RelErr   float64 `json:"rel_err"`
	Term     string  `json:"term"`
	// TermShare is the dominant term's share of the modeled step or pass.
	TermShare float64 `json:"term_share"`
}

// MeasuredCompare is every point of a file against one config.
type MeasuredCompare struct {
	Config  string           `json:"config"`
	Runtime string           `json:"runtime,omitempty"`
	Rows    []MeasuredRow    `json:"rows"`
	Errors  CollectiveErrors `json:"errors"` // median and max |rel_err| over the rows
}

// pointConfig is cfg with a point's workload: batch, prompt + output
// context, both phases.
func pointConfig(cfg *configs.Config, p MeasuredPoint) (*configs.Config, error) {
	c := *cfg
	w := c.Workload
	in, out := p.Input, p.Output
	if in <= 0 {
		in = w.PromptTokens()
	}
	if out <= 0 {
		out = w.OutputTokens
	}
	if p.Batch > 0 {
		w.Batch = p.Batch
	}
	w.Context, w.OutputTokens, w.Phases = in+out, out, []string{"prefill", "decode"}
	c.Workload = w
	if w.Batch%c.Parallel.Microbatches != 0 {
		c.Parallel.Microbatches = 1
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s (batch %d, input %d, output %d): %w", p.Source, w.Batch, in, out, err)
	}
	return &c, nil
}

// modeledPoint estimates one point and returns its rows.
func modeledPoint(cfg *configs.Config, i int, p MeasuredPoint, opts Options) ([]MeasuredRow, error) {
	c, err := pointConfig(cfg, p)
	if err != nil {
		return nil, err
	}
	e, err := EstimateConfig(c, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Source, err)
	}
	w := c.Workload
	ttft, tpot := e.Prefill.TTFTS, e.Decode.TPOTS
	e2e := ttft + float64(w.OutputTokens-1)*tpot
	rate := float64(w.Batch*w.OutputTokens) / e2e
	if p.Requests > 0 {
		batches := math.Ceil(float64(p.Requests) / float64(w.Batch*max(e.DP, 1)))
		tokens := p.TokensTotal
		if tokens <= 0 {
			tokens = float64(p.Requests * w.Context)
		}
		rate = tokens / (batches * e2e)
	}
	pterm, pshare := dominantTerm(e, false)
	dterm, dshare := dominantTerm(e, true)
	var rows []MeasuredRow
	add := func(metric string, measured, modeled float64, term string, share float64) {
		if measured <= 0 {
			return
		}
		rows = append(rows, MeasuredRow{Point: i, Source: p.Source, Batch: w.Batch, Input: w.PromptTokens(), Output: w.OutputTokens,
			Metric: metric, Measured: measured, Modeled: modeled, RelErr: (modeled - measured) / measured, Term: term, TermShare: share})
	}
	add("ttft_s", p.TTFTS, ttft, pterm, pshare)
	add("tpot_s", p.TPOTS, tpot, dterm, dshare)
	// End to end and the rate are mostly decode unless the prompt dominates.
	eterm, eshare := dterm, dshare
	if ttft > float64(w.OutputTokens-1)*tpot {
		eterm, eshare = pterm, pshare
	}
	add("e2e_s", p.E2ES, e2e, eterm, eshare)
	add("tokens_per_s", p.TokensPerS, rate, eterm, eshare)
	return rows, nil
}

// dominantTerm names the largest part of a phase's modeled time on its
// critical rank: the host's work, kernel launches, or the bound most of
// the remaining op time is limited by. share is its fraction of the phase.
func dominantTerm(e *Estimate, decode bool) (string, float64) {
	pe, total := e.Prefill, e.Prefill.TTFTS
	var f FixedCosts
	if decode {
		pe, total = e.Decode, e.Decode.TPOTS
	}
	if r, ok := e.Ranks.Row(pe.CriticalRank); ok {
		f = r.PrefillFixed
		if decode {
			f = r.DecodeFixed
		}
	}
	if total <= 0 {
		return string(pe.Bottleneck), 0
	}
	var window float64
	for _, t := range pe.TimeByBound {
		window += t
	}
	fixed := f.HostS + f.LaunchS + f.GraphLaunchS
	term, share := string(pe.Bottleneck), 0.0
	if window > 0 {
		// The bound's share of the op time that is not fixed cost.
		share = pe.TimeByBound[pe.Bottleneck] / window * math.Max(0, 1-fixed/total)
	}
	if s := f.HostS / total; s > share {
		term, share = "host", s
	}
	if s := (f.LaunchS + f.GraphLaunchS) / total; s > share {
		term, share = "launch", s
	}
	return term, share
}

// CompareMeasured puts the model beside every point.
func CompareMeasured(cfg *configs.Config, pts []MeasuredPoint, opts Options) (MeasuredCompare, error) {
	out := MeasuredCompare{Config: cfg.Name, Runtime: cfg.Runtime.Name}
	if len(pts) == 0 {
		return out, fmt.Errorf("no measured point")
	}
	var errs []float64
	for i, p := range pts {
		rows, err := modeledPoint(cfg, i, p, opts)
		if err != nil {
			return out, err
		}
		for _, r := range rows {
			errs = append(errs, math.Abs(r.RelErr))
		}
		out.Rows = append(out.Rows, rows...)
	}
	if len(errs) == 0 {
		return out, fmt.Errorf("no point reports a TTFT, TPOT, end-to-end latency or token rate above 0")
	}
	out.Errors = SummarizeErrors(errs)
	return out, nil
}

// RuntimeFit is a runtime profile (and the GPU's compute efficiency)
// fitted to measured points, with the errors before and after.
type RuntimeFit struct {
	Runtime           configs.Runtime  `json:"runtime"`
	ComputeEfficiency float64          `json:"compute_efficiency"`
	Fitted            []string         `json:"fitted"`
	Rows              int              `json:"rows"`
	Before            CollectiveErrors `json:"before"`
	After             CollectiveErrors `json:"after"`
}

// fitParam is one fitted constant: read and write it on a config, and its
// bounds (the fit works on a logistic map of [lo, hi]).
type fitParam struct {
	key    string
	get    func(c *configs.Config) float64
	set    func(c *configs.Config, v float64)
	lo, hi float64
}

// FitRuntime fits the config's host costs and compute efficiency to the
// points: the smallest sum of squared relative errors (gonum's Nelder–Mead
// over each constant mapped onto its range). It fits step_overhead_s, and
// step_per_seq_s when the points have two or more batch sizes,
// compute_efficiency when some point reports TTFT or end-to-end latency,
// and kernel_launch_s only under CUDA graphs (ungraphed, a step's launches
// and its step overhead are both a constant per pass: only their sum is
// seen, and the launch keeps its value). The runtime starts from the
// config's (its hardware's fixed costs where it has none) and is named by name.
func FitRuntime(cfg *configs.Config, pts []MeasuredPoint, opts Options, name string) (RuntimeFit, error) {
	base := *cfg
	g := base.Hardware.GPU
	rt := base.Runtime
	if !rt.Set() {
		rt = configs.Runtime{StepOverheadS: g.StepOverheadS, StepPerSeqS: g.StepPerSeqS, StepPerTokenS: g.StepPerTokenS,
			KernelLaunchS: g.KernelLaunchS, CUDAGraphs: g.CUDAGraphs, GraphLaunchS: g.GraphLaunchS, GraphKernelS: g.GraphKernelS,
			AllReduce: g.AllReduce, CustomAllReduceMaxBytes: g.CustomAllReduceMaxBytes, CustomAllReduceFixedS: g.CustomAllReduceFixedS}
		if rt.AllReduce == "" {
			rt.AllReduce = "nccl"
		}
	}
	rt.Preset, rt.Name, rt.Engine, rt.Ranges = "", name, "fitted by partbench model --measured --fit", configs.RuntimeRanges{}
	base.Runtime = rt
	base.Hardware.GPU = rt.Apply(g)

	before, err := CompareMeasured(&base, pts, opts)
	if err != nil {
		return RuntimeFit{}, err
	}
	batches, prefill := map[int]bool{}, false
	for _, r := range before.Rows {
		batches[r.Batch] = true
		prefill = prefill || r.Metric == "ttft_s" || r.Metric == "e2e_s"
	}
	params := []fitParam{{"step_overhead_s", func(c *configs.Config) float64 { return c.Runtime.StepOverheadS },
		func(c *configs.Config, v float64) { c.Runtime.StepOverheadS = v }, 0, 20e-3}}
	if len(batches) >= 2 {
		params = append(params, fitParam{"step_per_seq_s", func(c *configs.Config) float64 { return c.Runtime.StepPerSeqS },
			func(c *configs.Config, v float64) { c.Runtime.StepPerSeqS = v }, 0, 500e-6})
	}
	if rt.CUDAGraphs {
		params = append(params, fitParam{"kernel_launch_s", func(c *configs.Config) float64 { return c.Runtime.KernelLaunchS },
			func(c *configs.Config, v float64) { c.Runtime.KernelLaunchS = v }, 1e-6, 50e-6})
	}
	if prefill {
		params = append(params, fitParam{"compute_efficiency", func(c *configs.Config) float64 { return c.Hardware.ComputeEfficiency },
			func(c *configs.Config, v float64) { c.Hardware.ComputeEfficiency = v }, 0.2, 0.95})
	}
	// Each constant is fitted in units of its scale (x = v / scale), so the
	// simplex moves all of them alike; a value outside [lo, hi] is clamped.
	scale := func(p fitParam) float64 { return (p.hi - p.lo) / 10 }
	apply := func(x []float64) *configs.Config {
		c := base
		for i, p := range params {
			p.set(&c, math.Min(math.Max(x[i]*scale(p), p.lo), p.hi))
		}
		c.Hardware.GPU = c.Runtime.Apply(c.Hardware.GPU)
		return &c
	}
	objective := func(x []float64) float64 {
		c := apply(x)
		var sum float64
		for i, p := range pts {
			rows, err := modeledPoint(c, i, p, opts)
			if err != nil {
				return math.Inf(1)
			}
			for _, r := range rows {
				sum += r.RelErr * r.RelErr
			}
		}
		return sum
	}
	x0 := make([]float64, len(params))
	for i, p := range params {
		x0[i] = p.get(&base) / scale(p)
	}
	res, err := optimize.Minimize(optimize.Problem{Func: objective}, x0,
		&optimize.Settings{FuncEvaluations: 120 * len(params), Converger: &optimize.FunctionConverge{Absolute: 1e-14, Relative: 1e-10, Iterations: 60}},
		&optimize.NelderMead{SimplexSize: 0.5})
	if err != nil && res == nil {
		return RuntimeFit{}, fmt.Errorf("runtime fit: %w", err)
	}
	best := x0
	if res != nil && res.F <= objective(x0) {
		best = res.X
	}
	fitted := apply(best)
	after, err := CompareMeasured(fitted, pts, opts)
	if err != nil {
		return RuntimeFit{}, err
	}
	var keys []string
	for _, p := range params {
		keys = append(keys, p.key)
	}
	sort.Strings(keys)
	return RuntimeFit{Runtime: fitted.Runtime, ComputeEfficiency: fitted.Hardware.ComputeEfficiency, Fitted: keys,
		Rows: len(after.Rows), Before: before.Errors, After: after.Errors}, nil
}
