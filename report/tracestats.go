package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/tracestats"
)

// TraceStatsSchema is the schema of `trace stats --format json`.
const TraceStatsSchema = "partbench.tracestats/v1"

// TraceStats is what `partbench trace stats` hands over to be drawn.
type TraceStats struct {
	File    string
	Options tracestats.Options
	Rows    []tracestats.Row
	Pairs   []tracestats.Pair
}

// us3 formats seconds as microseconds with three decimals (nsys prints ns;
// partbench's ops are microseconds to milliseconds long).
func us3(s float64) string { return strconv.FormatFloat(s*1e6, 'f', 3, 64) }

func rankLabel(r int) string {
	if r == tracestats.AllRanks {
		return "all"
	}
	return strconv.Itoa(r)
}

func phaseLabel(p string) string {
	if p == tracestats.AllPhases {
		return "all"
	}
	return p
}

// TraceStatsGrids lays the summary out as nsys stats does: one table per
// process (and rank and phase when asked for), ops by total time, then the
// measured-beside-modeled table when the trace holds both.
func TraceStatsGrids(s TraceStats) []Grid {
	opHead := "op"
	if s.Options.By == tracestats.ByKind {
		opHead = "kind"
	}
	var grids []Grid
	var cur *Grid
	for _, r := range s.Rows {
		title := r.Process
		if s.Options.PerRank {
			title += ", rank " + rankLabel(r.Rank)
		}
		if s.Options.PerPhase {
			title += ", phase " + phaseLabel(r.Phase)
		}
		if cur == nil || cur.Title != title {
			grids = append(grids, Grid{Title: title, Header: []string{"time (%)", "total (ms)", "count", "mean (µs)", "median (µs)", "min (µs)", "max (µs)", "stddev (µs)", opHead}})
			cur = &grids[len(grids)-1]
		}
		cur.Rows = append(cur.Rows, []string{pct(r.Percent / 100), ms(r.TotalS), strconv.Itoa(r.Count), us3(r.MeanS), us3(r.MedianS), us3(r.MinS), us3(r.MaxS), us3(r.StdDevS), r.Op})
	}
	if len(s.Pairs) > 0 {
		g := Grid{Title: "measured beside modeled (mean per instance)", Header: []string{"run", "rank", "phase", opHead,
			"count meas", "count model", "mean meas (µs)", "mean model (µs)", "error " + stats.ErrorDefinition}}
		for _, p := range s.Pairs {
			row := []string{p.Run, rankLabel(p.Rank), phaseLabel(p.Phase), p.Op, "—", "—", "—", "—", "—"}
			if p.Measured != nil {
				row[4], row[6] = strconv.Itoa(p.Measured.Count), us3(p.Measured.MeanS)
			}
			if p.Modeled != nil {
				row[5], row[7] = strconv.Itoa(p.Modeled.Count), us3(p.Modeled.MeanS)
			}
			if p.Error != nil {
				row[8] = fmt.Sprintf("%+.1f %%", 100**p.Error)
			}
			g.Rows = append(g.Rows, row)
		}
		g.Notes = []string{"counts differ where the run and the model cover different decode steps or ranks: compare means, not totals"}
		grids = append(grids, g)
	}
	if len(grids) == 0 {
		grids = append(grids, Grid{Title: s.File, Header: []string{"note"}, Rows: [][]string{{"the trace holds no timed events"}}})
	}
	return grids
}

// WriteTraceStats writes the summary in format: table, markdown or csv
// through the grids, json as partbench.tracestats/v1.
func WriteTraceStats(w io.Writer, format, version string, s TraceStats) error {
	if format == FormatJSON {
		rows, pairs := s.Rows, s.Pairs
		if rows == nil {
			rows = []tracestats.Row{}
		}
		if pairs == nil {
			pairs = []tracestats.Pair{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Schema   string            `json:"schema"`
			Version  string            `json:"version,omitempty"`
			File     string            `json:"file"`
			By       string            `json:"by"`
			PerRank  bool              `json:"per_rank"`
			PerPhase bool              `json:"per_phase"`
			ErrorDef string            `json:"error_definition"`
			Rows     []tracestats.Row  `json:"rows"`
			Pairs    []tracestats.Pair `json:"pairs"`
		}{TraceStatsSchema, version, s.File, string(s.Options.By), s.Options.PerRank, s.Options.PerPhase,
			"(modeled − measured) / measured, of the mean per instance", rows, pairs})
	}
	return WriteTables(w, format, "trace stats", version, TraceStatsGrids(s)...)
}
