package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/partbench/partbench/serving"
)

// ServingSchema is the schema of `partbench serving --format json`.
const ServingSchema = "partbench.serving/v1"

// ServingDoc is a serving run as computed: what was simulated and the sweep.
type ServingDoc struct {
	Config         string // config name
	Plan           string // the plan's one-line summary
	Hardware       string
	Replicas       int
	Router         string
	Scheduler      serving.SchedulerConfig
	KV             serving.KVCache
	Workload       string // e.g. "random 1024/128 ±0, poisson"
	NumPrompts     int
	Burstiness     float64
	MaxConcurrency int
	Seed           uint64
	Sweep          *serving.Sweep
	// Client marks a run measured at the client of a server partbench does
	// not model: no plan, scheduler or KV cache to show.
	Client bool
}

// percentileWord is vLLM's: 99 → "99", 99.9 → "99.9".
func percentileWord(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// rateValue is a rate for JSON: "inf" as vLLM writes float("inf") is not
// JSON, so the string "inf".
func rateValue(r float64) any {
	if math.IsInf(r, 1) {
		return "inf"
	}
	if math.IsNaN(r) {
		return nil
	}
	return r
}

func nanNil(v float64) any {
	if math.IsNaN(v) {
		return nil
	}
	return v
}

// servingResult is one point under benchmark_serving's result keys.
func servingResult(d *ServingDoc, p serving.Point) map[string]any {
	m := p.Metrics
	out := map[string]any{
		"request_rate":            rateValue(p.RequestRate),
		"burstiness":              d.Burstiness,
		"max_concurrency":         nil,
		"num_prompts":             d.NumPrompts,
		"duration":                m.DurationS,
		"completed":               m.Completed,
		"failed":                  m.Failed,
		"total_input_tokens":      m.TotalInputTokens,
		"total_output_tokens":     m.TotalOutputTokens,
		"request_throughput":      m.RequestThroughput,
		"request_goodput":         nanNil(m.RequestGoodput),
		"output_throughput":       m.OutputThroughput,
		"total_token_throughput":  m.TotalTokenThroughput,
		"num_preemptions":         m.Preemptions,
		"num_swaps":               m.Swaps,
		"mean_requests_in_system": m.MeanInSystem,
	}
	if d.MaxConcurrency > 0 {
		out["max_concurrency"] = d.MaxConcurrency
	}
	for _, x := range []struct {
		key string
		d   serving.Dist
	}{{"ttft", m.TTFT}, {"tpot", m.TPOT}, {"itl", m.ITL}, {"e2el", m.E2EL}} {
		out["mean_"+x.key+"_ms"] = x.d.MeanMs
		out["median_"+x.key+"_ms"] = x.d.MedianMs
		out["std_"+x.key+"_ms"] = x.d.StdMs
		for i, pc := range m.Ps {
			out["p"+percentileWord(pc)+"_"+x.key+"_ms"] = x.d.Percentiles[i]
		}
	}
	return out
}

// ServingJSON writes the document: one rate is benchmark_serving's result
// object with "schema" and the deployment added; a sweep puts one such
// object per rate under "sweep".
func ServingJSON(w io.Writer, version string, d *ServingDoc) error {
	head := map[string]any{
		"schema":   ServingSchema,
		"version":  version,
		"model_id": d.Config,
		"backend":  "partbench-sim",
		"plan":     d.Plan,
		"replicas": d.Replicas,
		"router":   d.Router,
		"scheduler": map[string]any{"policy": d.Scheduler.Policy, "max_num_seqs": d.Scheduler.MaxNumSeqs,
			"max_num_batched_tokens": d.Scheduler.MaxNumBatchedTokens, "block_size": d.Scheduler.BlockSize, "num_gpu_blocks": d.Scheduler.NumBlocks},
		"kv_cache": d.KV,
		"workload": d.Workload,
		"seed":     d.Seed,
	}
	if d.Client {
		// A server partbench does not model: what was measured, and where.
		head = map[string]any{"schema": ServingSchema, "version": version, "backend": "openai-completions", "base_url": d.Config,
			"workload": d.Workload, "seed": d.Seed}
	}
	if s := d.Sweep.SLO; s.Set() {
		head["goodput_slo_ms"] = map[string]float64{"ttft": s.TTFTMs, "tpot": s.TPOTMs, "e2el": s.E2ELMs}
		head["slo_attainment"] = d.Sweep.Attainment
	}
	if len(d.Sweep.Points) == 1 {
		for k, v := range servingResult(d, d.Sweep.Points[0]) {
			head[k] = v
		}
	} else {
		var pts []map[string]any
		for _, p := range d.Sweep.Points {
			pts = append(pts, servingResult(d, p))
		}
		head["sweep"] = pts
		head["best_request_rate"] = nanNil(d.Sweep.BestRate)
		head["knee_request_rate"] = nanNil(d.Sweep.Knee)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(head)
}

func rateLabel(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', 4, 64)
}

// ServingText writes one rate as benchmark_serving prints it, under a line
// naming what was simulated.
func ServingText(w io.Writer, d *ServingDoc, p serving.Point) error {
	m := p.Metrics
	line := func(k string, v any) {
		switch x := v.(type) {
		case float64:
			fmt.Fprintf(w, "%-40s %-10.2f\n", k, x)
		default:
			fmt.Fprintf(w, "%-40s %-10v\n", k, x)
		}
	}
	sep := func(title string) {
		n := 50 - len(title)
		fmt.Fprintf(w, "%s%s%s\n", strings.Repeat("-", n/2), title, strings.Repeat("-", n-n/2))
	}
	if d.Client {
		fmt.Fprintf(w, "%s (measured at the client; %s; request rate %s)\n", d.Config, d.Workload, rateLabel(p.RequestRate))
	} else {
		fmt.Fprintf(w, "%s (modeled: %s; %s; request rate %s)\n", d.Config, d.Plan, d.Workload, rateLabel(p.RequestRate))
	}
	fmt.Fprintln(w, "============ Serving Benchmark Result ============")
	line("Successful requests:", m.Completed)
	line("Failed requests:", m.Failed)
	if d.MaxConcurrency > 0 {
		line("Maximum request concurrency:", d.MaxConcurrency)
	}
	line("Benchmark duration (s):", m.DurationS)
	line("Total input tokens:", m.TotalInputTokens)
	line("Total generated tokens:", m.TotalOutputTokens)
	line("Request throughput (req/s):", m.RequestThroughput)
	if !math.IsNaN(m.RequestGoodput) {
		line("Request goodput (req/s):", m.RequestGoodput)
	}
	line("Output token throughput (tok/s):", m.OutputThroughput)
	line("Total Token throughput (tok/s):", m.TotalTokenThroughput)
	for _, x := range []struct {
		title, short string
		d            serving.Dist
	}{{"Time to First Token", "TTFT", m.TTFT}, {"Time per Output Token (excl. 1st token)", "TPOT", m.TPOT},
		{"Inter-token Latency", "ITL", m.ITL}, {"End-to-end Latency", "E2EL", m.E2EL}} {
		sep(x.title)
		line("Mean "+x.short+" (ms):", x.d.MeanMs)
		line("Median "+x.short+" (ms):", x.d.MedianMs)
		for i, pc := range m.Ps {
			line("P"+percentileWord(pc)+" "+x.short+" (ms):", x.d.Percentiles[i])
		}
	}
	if d.Client {
		fmt.Fprintln(w, "==================================================")
		return nil
	}
	sep("Scheduler")
	line("Preemptions:", m.Preemptions)
	if d.Scheduler.Preemption == serving.PreemptSwap {
		line("  of which swapped out:", m.Swaps)
	}
	line("KV cache blocks per replica:", fmt.Sprintf("%d × %d tokens", d.KV.NumBlocks, d.KV.BlockSize))
	line("Mean requests in system:", m.MeanInSystem)
	fmt.Fprintln(w, "==================================================")
	return nil
}

// ServingGrid is a sweep as one table: a row per rate.
func ServingGrid(d *ServingDoc) Grid {
	pc := 99.0
	if ps := d.Sweep.Points[0].Metrics.Ps; len(ps) > 0 {
		pc = ps[len(ps)-1]
	}
	pw := "p" + percentileWord(pc)
	g := Grid{Title: fmt.Sprintf("Serving sweep: %s (%s; %s)", d.Config, d.Plan, d.Workload),
		Header: []string{"rate (req/s)", "completed", "failed", "req/s", "output tok/s", "mean TTFT (ms)", "median TTFT (ms)", pw + " TTFT (ms)",
			"mean TPOT (ms)", pw + " TPOT (ms)", "mean ITL (ms)", pw + " E2EL (ms)", "goodput (req/s)", "good (%)", "preemptions"}}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "—"
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	for _, p := range d.Sweep.Points {
		m := p.Metrics
		last := func(x serving.Dist) float64 {
			if len(x.Percentiles) == 0 {
				return math.NaN()
			}
			return x.Percentiles[len(x.Percentiles)-1]
		}
		g.Rows = append(g.Rows, []string{rateLabel(p.RequestRate), strconv.Itoa(m.Completed), strconv.Itoa(m.Failed), f(m.RequestThroughput),
			f(m.OutputThroughput), f(m.TTFT.MeanMs), f(m.TTFT.MedianMs), f(last(m.TTFT)), f(m.TPOT.MeanMs), f(last(m.TPOT)),
			f(m.ITL.MeanMs), f(last(m.E2EL)), f(m.RequestGoodput), f(100 * p.GoodFraction), strconv.Itoa(m.Preemptions)})
	}
	sw := d.Sweep
	if sw.SLO.Set() {
		best := "none of the swept rates"
		if !math.IsNaN(sw.BestRate) {
			best = rateLabel(sw.BestRate) + " req/s"
		}
		g.Notes = append(g.Notes, fmt.Sprintf("highest rate meeting the SLO (%s, %.0f %% of requests): %s", sloText(sw.SLO), 100*sw.Attainment, best))
	}
	knee := "not reached"
	if !math.IsNaN(sw.Knee) {
		knee = rateLabel(sw.Knee) + " req/s"
	}
	g.Notes = append(g.Notes, fmt.Sprintf("knee (the lowest rate whose throughput falls under %.0f %% of the offered rate): %s", 100*serving.KneeFraction, knee),
		fmt.Sprintf("%d replica(s), %s router; %s scheduler, max %d seqs, %d batched tokens; KV cache %d blocks × %d tokens per replica",
			d.Replicas, d.Router, d.Scheduler.Policy, d.Scheduler.MaxNumSeqs, d.Scheduler.MaxNumBatchedTokens, d.KV.NumBlocks, d.KV.BlockSize))
	return g
}

func sloText(s serving.Goodput) string {
	var parts []string
	for _, x := range []struct {
		k string
		v float64
	}{{"TTFT", s.TTFTMs}, {"TPOT", s.TPOTMs}, {"E2EL", s.E2ELMs}} {
		if x.v > 0 {
			parts = append(parts, fmt.Sprintf("%s ≤ %g ms", x.k, x.v))
		}
	}
	return strings.Join(parts, ", ")
}

// ServingRequestsJSONL writes one request's timeline per line (seconds from
// the start of the run; error set on a failed request).
func ServingRequestsJSONL(w io.Writer, reqs []serving.RequestResult) error {
	enc := json.NewEncoder(w)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
