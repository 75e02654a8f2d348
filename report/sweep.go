package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/partbench/partbench/sim"
)

// SweepSchema names the JSON layout of `partbench model --dry-run --sweep`.
const SweepSchema = "partbench.sweep/v1"

// SweepPoint is every strategy's estimate at one value of the swept key
// (sim.Sweep computes them).
type SweepPoint = sim.SweepPoint

// SweepGrid tabulates a sweep: one row per value and strategy, and a note
// on where the ranking by throughput changes. With one strategy there is no
// ranking: the "best TPS" column and the note are left out.
func SweepGrid(key string, pts []SweepPoint) Grid {
	several := false
	for _, p := range pts {
		several = several || len(p.Strategies) > 1
	}
	g := Grid{Title: "What-if: " + key, Header: []string{key, "strategy", "TTFT (s)", "TPOT (ms)", "TPS (tok/s)", "decode bubble (%)",
		"L2 residency (%)", "max memory/GPU (GB)", "decode bottleneck"}}
	if several {
		g.Header = append(g.Header, "best TPS")
	}
	prevBest := ""
	for _, p := range pts {
		best := ""
		bestTPS := -1.0
		for _, e := range p.Strategies {
			if e.Decode.TokensPerS > bestTPS {
				best, bestTPS = e.Name, e.Decode.TokensPerS
			}
		}
		for _, e := range p.Strategies {
			mark := ""
			if e.Name == best && len(p.Strategies) > 1 {
				mark = "◀"
			}
			row := []string{itoa(p.Value), e.Name, sec(e.Prefill.TTFTS), ms(e.Decode.TPOTS), num(e.Decode.TokensPerS),
				pct(e.Decode.BubbleFraction), pct(e.L2.WeightResidency), gbs(maxRank(e).TotalBytes), string(e.Decode.Bottleneck)}
			if several {
				row = append(row, mark)
			}
			g.Rows = append(g.Rows, row)
		}
		for _, s := range p.Skipped {
			g.Notes = append(g.Notes, fmt.Sprintf("%s = %d: %s", key, p.Value, s))
		}
		if prevBest != "" && best != "" && best != prevBest {
			g.Notes = append(g.Notes, fmt.Sprintf("at %s = %d the highest throughput moves from %s to %s", key, p.Value, prevBest, best))
		}
		if best != "" {
			prevBest = best
		}
	}
	if several && len(pts) > 0 && len(g.Notes) == 0 {
		g.Notes = append(g.Notes, "the ranking by throughput does not change over this range")
	}
	return g
}

// SweepJSON writes a sweep.
func SweepJSON(w io.Writer, version, key string, pts []SweepPoint) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema  string       `json:"schema"`
		Version string       `json:"partbench_version"`
		Key     string       `json:"key"`
		Points  []SweepPoint `json:"points"`
	}{SweepSchema, version, key, pts})
}

// SweepCSV writes one row per value and strategy.
func SweepCSV(w io.Writer, key string, pts []SweepPoint) error {
	g := Grid{Header: []string{key, "strategy", "ttft_s", "tpot_s", "tokens_per_s", "decode_bubble_fraction", "l2_weight_residency", "max_total_bytes"}}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, p := range pts {
		for _, e := range p.Strategies {
			g.Rows = append(g.Rows, []string{itoa(p.Value), e.Name, f(e.Prefill.TTFTS), f(e.Decode.TPOTS), f(e.Decode.TokensPerS),
				f(e.Decode.BubbleFraction), f(e.L2.WeightResidency), itoa(maxRank(e).TotalBytes)})
		}
	}
	return WriteCSV(w, g)
}

// Sweep writes a what-if sweep over key in format: json (with partbench's
// version), csv, or a grid (table, markdown).
func Sweep(w io.Writer, format, version, key string, pts []SweepPoint) error {
	switch format {
	case FormatJSON:
		return SweepJSON(w, version, key, pts)
	case FormatCSV:
		return SweepCSV(w, key, pts)
	}
	return WriteGrids(w, format, SweepGrid(key, pts))
}
