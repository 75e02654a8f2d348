package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/stats"
)

// RunSchema names the JSON layout of a measured run (docs/json-schema.md).
const RunSchema = compare.RunSchema

// RunDoc is everything a measured run produced (package compare builds it).
type RunDoc = compare.RunDoc

// RunJSON writes a run document.
func RunJSON(w io.Writer, d *RunDoc) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

func g4(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// scaled formats a value in a row's unit, with seconds shown in ms.
func scaled(unit string, v float64) string {
	if unit == "s" {
		return strconv.FormatFloat(v*1e3, 'f', 3, 64)
	}
	return g4(v)
}

func unitHeader(unit string) string {
	if unit == "s" {
		return "ms"
	}
	return unit
}

// RunGrids lays out a measured run beside its estimate.
func RunGrids(d *RunDoc, perRank bool) []Grid {
	m := d.Measurement
	cmp := Grid{Title: fmt.Sprintf("Measured vs modeled: %s on %s (%d ranks, %d warm-up + %d measured iterations, %d decode steps each)",
		d.Config.Name, d.Backend, len(m.Ranks), m.Warmup, m.Iterations, m.DecodeSteps),
		Header: []string{"metric", "unit", "measured mean", "std", "p50", "p95", "p99", "modeled", "error " + stats.ErrorDefinition + " (%)", "flag"},
		Notes:  append(append([]string{}, d.Notes...), d.Problems...)}
	for _, r := range d.Comparison {
		s := r.Measured
		std, p50, p95, p99 := "", "", "", ""
		if s.N > 1 {
			std, p50, p95, p99 = scaled(r.Unit, s.Std), scaled(r.Unit, s.P50), scaled(r.Unit, s.P95), scaled(r.Unit, s.P99)
		}
		e := "n/a"
		if !math.IsInf(r.RelErr, 0) && !math.IsNaN(r.RelErr) {
			e = strconv.FormatFloat(100*r.RelErr, 'f', 1, 64)
		}
		row := []string{r.Label, unitHeader(r.Unit), scaled(r.Unit, s.Mean), std, p50, p95, p99, scaled(r.Unit, r.Modeled), e, r.Flag}
		if d.Estimate == nil {
			row = row[:7] // measurements alone (--no-compare-model)
		}
		cmp.Rows = append(cmp.Rows, row)
	}
	if d.Estimate == nil {
		cmp.Header = cmp.Header[:7]
		cmp.Title = "Measured: " + cmp.Title[len("Measured vs modeled: "):]
	}
	grids := []Grid{cmp}
	if d.Estimate != nil && len(d.OpCheck) > 0 {
		grids = append(grids, OpCheckGrid(d.OpCheck))
	}
	if perRank {
		g := Grid{Title: "Per rank (measured)", Header: []string{"rank", "host", "pid", "stage", "tp", "allocated (MB)",
			"prefill mean (ms)", "busy compute (s)", "busy comm (s)", "NCCL calls", "p2p messages", "wire (MB)"}}
		for _, r := range m.Ranks {
			var comp, comm float64
			for k, v := range r.BusyS {
				switch k {
				case "all_reduce", "all_gather", "send", "recv":
					comm += v
				default:
					comp += v
				}
			}
			calls := r.PrefillCounts.TotalCalls() + r.DecodeCounts.TotalCalls()
			msgs := r.PrefillCounts.Messages() + r.DecodeCounts.Messages()
			var wire int64
			for _, p := range r.PrefillCounts.Add(r.DecodeCounts).Peers {
				wire += p.WireBytes
			}
			g.Rows = append(g.Rows, []string{itoa(r.Rank), r.Host, itoa(r.PID), itoa(r.Stage), itoa(r.TPIndex),
				strconv.FormatFloat(float64(r.AllocatedBytes)/1e6, 'f', 3, 64), strconv.FormatFloat(1e3*r.PrefillMeanS, 'f', 3, 64),
				strconv.FormatFloat(comp, 'f', 3, 64), strconv.FormatFloat(comm, 'f', 3, 64), itoa(calls), itoa(msgs),
				strconv.FormatFloat(float64(wire)/1e6, 'f', 3, 64)})
		}
		grids = append(grids, g)
		if len(d.Memory) > 0 {
			grids = append(grids, MemoryGrid(d.Memory))
		}
	}
	return grids
}

// RunCSV writes the comparison rows of a run.
func RunCSV(w io.Writer, d *RunDoc) error {
	g := Grid{Header: []string{"config", "backend", "metric", "label", "unit", "n", "measured_mean", "measured_std", "measured_p50", "measured_p95",
		"measured_p99", "modeled", "rel_err", "exact", "flag"}}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, r := range d.Comparison {
		s := r.Measured
		g.Rows = append(g.Rows, []string{d.Config.Name, d.Backend, r.Metric, r.Label, r.Unit, itoa(s.N), f(s.Mean), f(s.Std), f(s.P50), f(s.P95),
			f(s.P99), f(r.Modeled), f(r.RelErr), strconv.FormatBool(r.Exact), r.Flag})
	}
	return WriteCSV(w, g)
}

// CheckGrid lays out a numerical check.
func CheckGrid(r exec.CheckResult) Grid {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	g := Grid{Title: fmt.Sprintf("Check %s: %s against %s — %s", r.Config, r.Partitioned, r.Reference, verdict),
		Header: []string{"sequences", "decode steps", "max |Δ|", "max |Δ|/max(1,|ref|)", "tolerance", "worst sequence", "worst step", "argmax compared", "argmax mismatches", "count differences"},
		Rows: [][]string{{itoa(r.Sequences), itoa(r.DecodeSteps), g4(r.MaxAbsErr), g4(r.MaxRelErr), g4(r.Tolerance), itoa(r.WorstSequence),
			itoa(r.WorstStep), itoa(r.ArgmaxCompared), itoa(len(r.ArgmaxMismatches)), itoa(len(r.CountDiffs))}},
		Notes: r.Failures}
	return g
}
