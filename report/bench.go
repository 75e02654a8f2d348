package report

import (
	"fmt"
	"strconv"

	"github.com/partbench/partbench/sim"
)

// BenchRun is one timed run of the search benchmark (sim.BenchSearch).
type BenchRun = sim.BenchRun

// BenchGrid lays out the benchmark's runs, each with its rate in candidates
// per second, and the best rate.
func BenchGrid(title string, runs []BenchRun) Grid {
	g := Grid{Title: title,
		Header: []string{"run", "candidates", "feasible", "pruned by memory", "time (ms)", "rate (candidates/s)", "best"}}
	var best float64
	for i, r := range runs {
		rate := float64(r.Enumerated) / r.ElapsedS
		best = max(best, rate)
		g.Rows = append(g.Rows, []string{strconv.Itoa(i + 1), strconv.Itoa(r.Enumerated), strconv.Itoa(r.Feasible), strconv.Itoa(r.PrunedMemory),
			strconv.FormatFloat(r.ElapsedS*1e3, 'f', 1, 64), strconv.FormatFloat(rate, 'f', 0, 64), r.Best})
	}
	g.Notes = []string{fmt.Sprintf("best rate %.0f candidates/s; time covers enumeration, memory fit (partition.NewPlan) and the closed-form estimate of every candidate, not the full-timeline re-run", best)}
	return g
}
