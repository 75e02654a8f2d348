package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/partbench/partbench/serving"
)

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
