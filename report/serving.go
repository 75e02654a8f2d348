package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

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
	fmt.Fprintf(w, "%s (modeled: %s; %s; request rate %s)\n", d.Config, d.Plan, d.Workload, rateLabel(p.RequestRate))
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

// ServingPlotFormat is the image format of a --plot path: png, svg or pdf.
func ServingPlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png", ".pdf":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot: must end in .png, .svg or .pdf (got %q)", path)
	}
}

// ServingPlot draws the latency–throughput curve: TTFT (median and the
// last percentile) and mean TPOT against the offered rate, each with its
// SLO line, the knee and the best rate marked. Rate inf has no place on a
// rate axis and is left out.
func ServingPlot(d *ServingDoc) (*Figure, error) {
	var pts []serving.Point
	for _, p := range d.Sweep.Points {
		if !math.IsInf(p.RequestRate, 1) {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("--plot: no finite request rate to draw (rate inf has no place on the axis)")
	}
	pc := 99.0
	if ps := pts[0].Metrics.Ps; len(ps) > 0 {
		pc = ps[len(ps)-1]
	}
	pw := "p" + percentileWord(pc)
	series := func(get func(serving.Metrics) float64) plotter.XYs {
		var xy plotter.XYs
		for _, p := range pts {
			xy = append(xy, plotter.XY{X: p.RequestRate, Y: get(p.Metrics)})
		}
		return xy
	}
	last := func(x serving.Dist) float64 { return x.Percentiles[len(x.Percentiles)-1] }
	f := &Figure{Title: fmt.Sprintf("Latency vs request rate: %s, %s (modeled)", d.Config, d.Hardware), PanelWidth: 5.5 * vg.Inch, Height: 4 * vg.Inch}
	for _, panel := range []struct {
		title, y string
		names    []string
		data     []plotter.XYs
		slo      float64
	}{
		{"TTFT", "TTFT (ms)", []string{"median TTFT", pw + " TTFT"},
			[]plotter.XYs{series(func(m serving.Metrics) float64 { return m.TTFT.MedianMs }), series(func(m serving.Metrics) float64 { return last(m.TTFT) })}, d.Sweep.SLO.TTFTMs},
		{"TPOT", "TPOT (ms)", []string{"mean TPOT", pw + " TPOT"},
			[]plotter.XYs{series(func(m serving.Metrics) float64 { return m.TPOT.MeanMs }), series(func(m serving.Metrics) float64 { return last(m.TPOT) })}, d.Sweep.SLO.TPOTMs},
	} {
		p := newPlot(panel.title+" vs request rate", "request rate (req/s)", panel.y)
		p.Legend.Left = true
		ymax, ymin := panel.slo, math.Inf(1)
		if panel.slo > 0 {
			ymin = panel.slo
		}
		for _, xy := range panel.data {
			for _, v := range xy {
				if v.Y > 0 {
					ymin = math.Min(ymin, v.Y)
				}
			}
		}
		// Latencies that span two decades (past the knee) go on a log axis,
		// so the SLO line and the curve below the knee stay readable.
		logY := ymin > 0 && !math.IsInf(ymin, 1)
		for _, xy := range panel.data {
			for _, v := range xy {
				logY = logY && v.Y > 0
				ymax = math.Max(ymax, v.Y)
			}
		}
		logY = logY && ymax >= 100*ymin
		if logY {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		}
		for i, xy := range panel.data {
			l, s, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, err
			}
			l.Color, s.Color, s.Shape = paletteColor(i), paletteColor(i), plotutil.Shape(i)
			l.Width = vg.Points(1.5)
			p.Add(l, s)
			p.Legend.Add(panel.names[i], l, s)
			for _, v := range xy {
				ymax = math.Max(ymax, v.Y)
			}
		}
		xmin, xmax := pts[0].RequestRate, pts[len(pts)-1].RequestRate
		for _, q := range pts {
			xmin, xmax = math.Min(xmin, q.RequestRate), math.Max(xmax, q.RequestRate)
		}
		if panel.slo > 0 {
			l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: panel.slo}, {X: xmax, Y: panel.slo}})
			if err != nil {
				return nil, err
			}
			l.Color, l.Dashes, l.Width = paletteColor(5), []vg.Length{vg.Points(6), vg.Points(3)}, vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("SLO %g ms", panel.slo), l)
		}
		for _, mark := range []struct {
			x     float64
			label string
			color int
		}{{d.Sweep.Knee, "knee", 7}, {d.Sweep.BestRate, "best rate meeting SLO", 2}} {
			if math.IsNaN(mark.x) || math.IsInf(mark.x, 0) {
				continue
			}
			lo := 0.0
			if logY {
				lo = ymin / 1.5
			}
			l, err := plotter.NewLine(plotter.XYs{{X: mark.x, Y: lo}, {X: mark.x, Y: ymax * 1.05}})
			if err != nil {
				return nil, err
			}
			l.Color, l.Dashes, l.Width = paletteColor(mark.color), []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s %s req/s", mark.label, rateLabel(mark.x)), l)
		}
		p.Y.Min, p.Y.Max = 0, ymax*1.1
		if logY {
			p.Y.Min, p.Y.Max = ymin/1.5, ymax*1.5
		}
		useEng(p, false)
		f.Panels = append(f.Panels, p)
	}
	// Achieved against offered: on the diagonal below the knee, flat past it.
	p := newPlot("Throughput vs request rate", "request rate (req/s)", "achieved (req/s)")
	p.Legend.Left = true
	got := series(func(m serving.Metrics) float64 { return m.RequestThroughput })
	var diag plotter.XYs
	for _, q := range got {
		diag = append(diag, plotter.XY{X: q.X, Y: q.X})
	}
	dl, err := plotter.NewLine(diag)
	if err != nil {
		return nil, err
	}
	dl.Color, dl.Dashes, dl.Width = paletteColor(7), []vg.Length{vg.Points(2), vg.Points(3)}, vg.Points(1)
	l, sc, err := plotter.NewLinePoints(got)
	if err != nil {
		return nil, err
	}
	l.Color, sc.Color, sc.Shape = paletteColor(2), paletteColor(2), plotutil.Shape(2)
	l.Width = vg.Points(1.5)
	p.Add(dl, l, sc)
	p.Legend.Add("achieved", l, sc)
	p.Legend.Add("offered", dl)
	if k := d.Sweep.Knee; !math.IsNaN(k) {
		kl, err := plotter.NewLine(plotter.XYs{{X: k, Y: 0}, {X: k, Y: k}})
		if err != nil {
			return nil, err
		}
		kl.Color, kl.Dashes, kl.Width = paletteColor(7), []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(1.5)
		p.Add(kl)
		p.Legend.Add(fmt.Sprintf("knee %s req/s", rateLabel(k)), kl)
	}
	p.Y.Min = 0
	useEng(p, false)
	f.Panels = append(f.Panels, p)
	return f, nil
}

// ServingPlacementsDoc is a placement search: every partitioning of the
// GPUs and the highest request rate it sustains at the SLO.
type ServingPlacementsDoc struct {
	Config     string
	System     string
	Workload   string
	SLO        serving.Goodput
	Attainment float64
	Scheduler  serving.SchedulerConfig
	Placements []serving.Placement
}

// ServingPlacementsGrid is the ranking: one row per placement, the best
// rate per GPU first, excluded placements last with the reason.
func ServingPlacementsGrid(d *ServingPlacementsDoc) Grid {
	g := Grid{Title: fmt.Sprintf("Highest sustainable request rate per GPU: %s on %s (%s; SLO %s for %.0f %% of requests)",
		d.Config, d.System, d.Workload, sloText(d.SLO), 100*d.Attainment),
		Header: []string{"placement", "TP", "PP", "DP", "GPUs", "max rate (req/s)", "per GPU (req/s)", "p TTFT (ms)", "mean TPOT (ms)", "KV blocks / replica", "excluded"}}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "—"
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	for _, p := range d.Placements {
		row := []string{p.Name, strconv.Itoa(p.TP), strconv.Itoa(p.PP), strconv.Itoa(p.DP), strconv.Itoa(p.GPUs), f(p.Rate), f(p.RatePerGPU)}
		if p.Excluded == "" && len(p.At.Metrics.Ps) > 0 {
			m := p.At.Metrics
			row = append(row, f(m.TTFT.Percentiles[len(m.Ps)-1]), f(m.TPOT.MeanMs), strconv.Itoa(p.KV.NumBlocks), "")
		} else {
			row = append(row, "—", "—", "—", p.Excluded)
		}
		g.Rows = append(g.Rows, row)
	}
	if len(d.Placements) > 0 {
		ps := "99"
		for _, p := range d.Placements {
			if len(p.At.Metrics.Ps) > 0 {
				ps = percentileWord(p.At.Metrics.Ps[len(p.At.Metrics.Ps)-1])
				break
			}
		}
		g.Header[7] = "p" + ps + " TTFT (ms)"
	}
	g.Notes = append(g.Notes, fmt.Sprintf("max rate: bisection to %.0f %% between 0 and the throughput with every request sent at once; TTFT and TPOT at that rate",
		100*serving.CapacityTolerance),
		fmt.Sprintf("%s scheduler, max %d seqs, %d batched tokens per replica", d.Scheduler.Policy, d.Scheduler.MaxNumSeqs, d.Scheduler.MaxNumBatchedTokens))
	return g
}

// ServingPlacementsJSON writes the ranking under partbench.serving/v1.
func ServingPlacementsJSON(w io.Writer, version string, d *ServingPlacementsDoc) error {
	rows := make([]map[string]any, 0, len(d.Placements))
	for _, p := range d.Placements {
		r := map[string]any{"name": p.Name, "tp": p.TP, "pp": p.PP, "dp": p.DP, "gpus": p.GPUs,
			"max_request_rate": nanNil(p.Rate), "max_request_rate_per_gpu": nanNil(p.RatePerGPU)}
		if p.Excluded != "" {
			r["excluded"] = p.Excluded
		} else {
			r["kv_cache"] = p.KV
			r["at_max_rate"] = servingResult(&ServingDoc{}, p.At)
		}
		rows = append(rows, r)
	}
	doc := map[string]any{"schema": ServingSchema, "version": version, "model_id": d.Config, "system": d.System, "workload": d.Workload,
		"objective": "max_request_rate_per_gpu", "goodput_slo_ms": map[string]float64{"ttft": d.SLO.TTFTMs, "tpot": d.SLO.TPOTMs, "e2el": d.SLO.E2ELMs},
		"slo_attainment": d.Attainment, "placements": rows}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// ServingMeasureDoc is a workload run for real on the CPU engine and
// modeled for the same engine.
type ServingMeasureDoc struct {
	Config, Hardware, Calibration, Workload string
	Rate                                    float64 // offered, requests/s (+Inf: all at once; NaN: a trace)
	Scheduler                               serving.SchedulerConfig
	Measured, Modeled                       serving.Metrics
	Errors                                  []serving.MetricError
}

// ServingMeasureGrid is the comparison: one row per metric.
func ServingMeasureGrid(d *ServingMeasureDoc) Grid {
	hw := d.Hardware
	if d.Calibration != "" {
		hw += " (" + d.Calibration + ")"
	}
	g := Grid{Title: fmt.Sprintf("Serving, measured on this machine's CPU engine and modeled: %s (%s; model hardware %s)", d.Config, d.Workload, hw),
		Header: []string{"metric", "modeled", "measured", "error (%)"}}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "—"
		}
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	g.Rows = append(g.Rows, []string{"completed", strconv.Itoa(d.Modeled.Completed), strconv.Itoa(d.Measured.Completed), ""},
		[]string{"failed", strconv.Itoa(d.Modeled.Failed), strconv.Itoa(d.Measured.Failed), ""},
		[]string{"preemptions", strconv.Itoa(d.Modeled.Preemptions), strconv.Itoa(d.Measured.Preemptions), ""})
	for _, e := range d.Errors {
		g.Rows = append(g.Rows, []string{e.Key, f(e.Modeled), f(e.Measured), f(100 * e.RelErr)})
	}
	g.Notes = append(g.Notes, "error = (modeled − measured) / measured",
		fmt.Sprintf("%s scheduler, %d slots, %d batched tokens; the engine runs each scheduled sequence's pass in turn, and the model prices it so",
			d.Scheduler.Policy, d.Scheduler.MaxNumSeqs, d.Scheduler.MaxNumBatchedTokens))
	if d.Calibration == "" {
		g.Notes = append(g.Notes, "the model uses the config's hardware, not this CPU: give --calibration FILE from 'partbench calibrate' to model this machine")
	}
	return g
}

// ServingMeasureJSON writes the comparison under partbench.serving/v1.
func ServingMeasureJSON(w io.Writer, version string, d *ServingMeasureDoc) error {
	doc := map[string]any{"schema": ServingSchema, "version": version, "model_id": d.Config, "model_hardware": d.Hardware,
		"calibration": d.Calibration, "workload": d.Workload, "backend": "partbench-cpu-engine",
		"measured":   servingResult(&ServingDoc{}, serving.Point{RequestRate: math.NaN(), Metrics: d.Measured}),
		"modeled":    servingResult(&ServingDoc{}, serving.Point{RequestRate: math.NaN(), Metrics: d.Modeled}),
		"comparison": d.Errors}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
