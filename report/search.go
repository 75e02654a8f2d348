package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/sim"
)

// Search writes a search's result in format (table, markdown: the top rows
// and notes; csv: every candidate; json: the whole result), version being
// partbench's; decodeSteps is what the full timeline re-run started with.
func Search(w io.Writer, format, version string, cfg *configs.Config, res *sim.SearchResult, top, decodeSteps int) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(SearchDoc{Schema: SearchSchema, Version: version, Source: cfg.Source, SearchResult: res})
	case FormatCSV:
		return WriteCSV(w, SearchCSVGrid(res))
	}
	return WriteGrids(w, format, SearchGrids(cfg, res, top, decodeSteps)...)
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// SearchGrids lays out the top rows and the counts.
func SearchGrids(cfg *configs.Config, res *sim.SearchResult, top, decodeSteps int) []Grid {
	title := fmt.Sprintf("Search: %s on %d × %s (%s), objective %s", cfg.Name, res.GPUs, res.Hardware, res.Topology, res.Objective)
	if res.MaxTPOTS > 0 {
		title += fmt.Sprintf(", TPOT ≤ %g ms", res.MaxTPOTS*1e3)
	}
	if res.MaxTTFTS > 0 {
		title += fmt.Sprintf(", TTFT ≤ %g s", res.MaxTTFTS)
	}
	g := Grid{Title: title, Header: []string{"rank", "TP", "PP", "DP", "µbatches", "layers/stage", "memory/GPU (GB)",
		"TTFT (s)", "TPOT (ms)", "TPS (tok/s)", "decode bubble (%)", "bottleneck",
		"full TTFT (s)", "full TPOT (ms)", "full TPS (tok/s)", "TPOT quick vs full (%)"}}
	for _, r := range res.Rows {
		if r.Rank == 0 || r.Rank > top {
			break
		}
		q := r.Quick
		row := []string{strconv.Itoa(r.Rank), strconv.Itoa(r.TP), strconv.Itoa(r.PP), strconv.Itoa(max(r.DP, 1)), strconv.Itoa(r.Microbatches), r.LayerSummary(),
			f3(float64(r.MemoryBytes) / 1e9), f3(q.TTFTS), f3(q.TPOTS * 1e3), strconv.FormatFloat(q.TokensPerS, 'f', 0, 64),
			f1(100 * q.BubbleFraction), string(q.Bottleneck), "", "", "", ""}
		if r.Full != nil {
			row[12], row[13], row[14] = f3(r.Full.TTFTS), f3(r.Full.TPOTS*1e3), strconv.FormatFloat(r.Full.TokensPerS, 'f', 0, 64)
		}
		if r.TPOTRelDiff != nil {
			row[15] = strconv.FormatFloat(100**r.TPOTRelDiff, 'f', 2, 64)
		}
		g.Rows = append(g.Rows, row)
	}
	g.Notes = searchNotes(res, decodeSteps)
	grids := []Grid{g}
	if res.Feasible == 0 && res.Violating > 0 {
		v := Grid{Title: "Closest candidates (each violates a constraint)", Header: []string{"TP", "PP", "DP", "µbatches", "layers/stage",
			"memory/GPU (GB)", "TTFT (s)", "TPOT (ms)", "TPS (tok/s)", "violation"}}
		for _, r := range res.Rows {
			if r.Status != sim.StatusViolates || len(v.Rows) == top {
				continue
			}
			q := r.Quick
			v.Rows = append(v.Rows, []string{strconv.Itoa(r.TP), strconv.Itoa(r.PP), strconv.Itoa(max(r.DP, 1)), strconv.Itoa(r.Microbatches), r.LayerSummary(),
				f3(float64(r.MemoryBytes) / 1e9), f3(q.TTFTS), f3(q.TPOTS * 1e3), strconv.FormatFloat(q.TokensPerS, 'f', 0, 64), r.Reason})
		}
		grids = append(grids, v)
	}
	return grids
}

func searchNotes(res *sim.SearchResult, decodeSteps int) []string {
	notes := []string{fmt.Sprintf("%d candidates enumerated: %d feasible, %d violating constraints%s, %d pruned by memory%s",
		res.Enumerated, res.Feasible, res.Violating, countList(res.ViolatingBy), res.PrunedMemory, countList(res.PrunedByReason))}
	var excluded []string
	for _, f := range res.Factorizations {
		if f.Excluded != "" {
			excluded = append(excluded, fmt.Sprintf("tp %d × pp %d × dp %d (%s)", f.TP, f.PP, max(f.DP, 1), f.Excluded))
		}
	}
	if len(excluded) > 0 {
		notes = append(notes, fmt.Sprintf("factorizations of %d GPUs not searched: %s", res.GPUs, strings.Join(excluded, ", ")))
	}
	notes = append(notes, fmt.Sprintf("searched in %.3f s (%.0f candidates/s); TTFT, TPOT, TPS, bubble and bottleneck are the closed-form estimate (docs/search.md), full columns the discrete-event timeline from %d decode steps",
		res.ElapsedS, res.CandidatesPerS, decodeSteps))
	if res.FullRuns > 0 {
		notes = append(notes, fmt.Sprintf("full-timeline re-run of the top %d: %d timelines in %.3f s; %.3f s in all", res.FullTop, res.FullRuns, res.FullElapsedS, res.ElapsedS+res.FullElapsedS))
	}
	var longer, disagree []string
	for _, r := range res.Rows {
		if r.Full == nil {
			continue
		}
		name := r.Name()
		if r.Rank > 0 {
			name = fmt.Sprintf("rank %d", r.Rank)
		}
		if r.FullDecodeSteps > decodeSteps {
			longer = append(longer, fmt.Sprintf("%s (%d steps)", name, r.FullDecodeSteps))
		}
		if r.TPOTRelDiff != nil && math.Abs(*r.TPOTRelDiff) > sim.QuickTolerance {
			disagree = append(disagree, fmt.Sprintf("%s (%+.1f %%)", name, 100**r.TPOTRelDiff))
		}
	}
	if len(longer) > 0 {
		notes = append(notes, "the timeline needed more decode steps to reach steady state for "+strings.Join(longer, ", "))
	}
	if len(disagree) > 0 {
		notes = append(notes, fmt.Sprintf("closed form and timeline TPOT differ by more than %.1f %% for %s", 100*sim.QuickTolerance, strings.Join(disagree, ", ")))
	}
	if res.Feasible == 0 {
		notes = append(notes, "no candidate is feasible: relax the constraints, add GPUs, or shrink the batch or context")
	}
	// Where the timeline orders the re-run candidates differently.
	best, bestRank := -1.0, 0
	for _, r := range res.Rows {
		if r.Full == nil || r.Rank == 0 {
			continue
		}
		v := r.Full.TokensPerS
		switch res.Objective {
		case sim.ObjectiveTPOT:
			v = -r.Full.TPOTS
		case sim.ObjectiveTTFT:
			v = -r.Full.TTFTS
		}
		if bestRank == 0 || v > best {
			best, bestRank = v, r.Rank
		}
	}
	if bestRank > 1 {
		notes = append(notes, fmt.Sprintf("by the full timeline the best of the re-run candidates is rank %d", bestRank))
	}
	return notes
}

// countList writes " (a: 1, b: 2)" for a non-empty map, keys sorted.
func countList(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// SearchCSVGrid is every candidate, one row each.
func SearchCSVGrid(res *sim.SearchResult) Grid {
	g := Grid{Header: []string{"rank", "status", "reason", "tp", "pp", "microbatches", "microbatch_size", "layer_variant",
		"stage_layers", "max_memory_bytes", "quick_ttft_s", "quick_tpot_s", "quick_tokens_per_s", "quick_decode_bubble_fraction",
		"quick_bottleneck", "full_ttft_s", "full_tpot_s", "full_tokens_per_s", "tpot_rel_diff", "dp"}}
	fg := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, r := range res.Rows {
		layers := make([]string, len(r.StageLayers))
		for i, n := range r.StageLayers {
			layers[i] = strconv.Itoa(n)
		}
		row := []string{strconv.Itoa(r.Rank), r.Status, r.Reason, strconv.Itoa(r.TP), strconv.Itoa(r.PP), strconv.Itoa(r.Microbatches),
			strconv.Itoa(r.MicrobatchSize), r.Variant, strings.Join(layers, " "), "", "", "", "", "", "", "", "", "", "", strconv.Itoa(max(r.DP, 1))}
		if q := r.Quick; q != nil {
			row[9], row[10], row[11], row[12], row[13], row[14] = strconv.FormatInt(r.MemoryBytes, 10), fg(q.TTFTS), fg(q.TPOTS),
				fg(q.TokensPerS), fg(q.BubbleFraction), string(q.Bottleneck)
		}
		if f := r.Full; f != nil {
			row[15], row[16], row[17] = fg(f.TTFTS), fg(f.TPOTS), fg(f.TokensPerS)
		}
		if r.TPOTRelDiff != nil {
			row[18] = fg(*r.TPOTRelDiff)
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}
