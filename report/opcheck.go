package report

import (
	"fmt"
	"strconv"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/sim"
)

// OpCheckGrid lays out a run's op check (compare.OpCheck): per phase and
// op kind, the measured time inside the kind's calls against the modeled
// time, their ratio, and where the model's figure came from (the profile's
// op-time table or the roofline).
func OpCheckGrid(rows []compare.OpCheckRow) Grid {
	g := Grid{Title: "Op check: measured vs modeled, per prefill or decode step, mean over the ranks running the kind",
		Header: []string{"phase", "kind", "ranks", "measured (µs)", "clock", "modeled (µs)", "modeled / measured", "priced by"},
		Notes: []string{"times inside the ops' calls; a collective's or recv's wait for its partner is part of it on both sides",
			"clock device: the traced iteration's marks on the device queue (decode op by op where the steps ran as graphs); host: the executor's timers around each call, median over the measured iterations; enqueue: an asynchronous device's ops not timed on it (the host timers saw the enqueue alone), so no measured time — run with --trace"}}
	for _, r := range rows {
		ratio := "n/a"
		if r.MeasuredS > 0 {
			ratio = strconv.FormatFloat(r.Ratio, 'f', 2, 64)
		}
		measured := strconv.FormatFloat(1e6*r.MeasuredS, 'f', 1, 64)
		if r.Clock == exec.ClockEnqueue {
			measured, ratio = "—", "—"
		}
		clock := r.Clock
		if clock == "" {
			clock = "—"
		}
		g.Rows = append(g.Rows, []string{r.Phase, r.Kind, itoa(r.Ranks),
			measured, clock, strconv.FormatFloat(1e6*r.ModeledS, 'f', 1, 64), ratio, pricedBy(r)})
	}
	return g
}

// pricedBy says how the model priced a row's ops (per rank and step).
func pricedBy(r compare.OpCheckRow) string {
	switch {
	case r.TableOps == 0 && r.RooflineOps == 0:
		return "—"
	case r.RooflineOps == 0:
		return "table"
	case r.TableOps == 0:
		return "roofline"
	}
	return fmt.Sprintf("table %d, roofline %d", r.TableOps, r.RooflineOps)
}

// pricingColumn adds to a per-rank grid how the model priced each rank's
// ops of one prefill and one decode step — "table / model": from the
// profile's op-time table, by the roofline or link model — when any op came
// from a table (a profile without one keeps the grid as it was).
func pricingColumn(g *Grid, e *sim.Estimate) {
	any := false
	for _, r := range e.Ranks.Kinds {
		any = any || r.TableOps > 0
	}
	if !any {
		return
	}
	g.Header = append(g.Header, "ops priced: table / model")
	for i, r := range e.Ranks.All() {
		if i < len(g.Rows) {
			g.Rows[i] = append(g.Rows[i], fmt.Sprintf("%d / %d", r.TableOps, r.ModelOps))
		}
	}
	g.Notes = append(g.Notes, "ops priced: one prefill's and one decode step's ops (recvs aside) priced from the hardware profile's op-time table / by the roofline or link model")
}
