package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/partbench/partbench/serving"
)

// ServingMeasureDoc is a workload run for real on the CPU engine and
// modeled for the same engine.
type ServingMeasureDoc struct {
	Config, Hardware, Calibration, Workload string
	Rate                                    float64 // offered, requests/s (+Inf: all at once; NaN: a trace)
	Scheduler                               serving.SchedulerConfig
	Measured, Modeled                       serving.Metrics
	Errors                                  []serving.MetricError
	// Engine says how the engine ran an iteration and the model priced it
	// (empty: each scheduled sequence's pass in turn); Backend is the
	// measured side's "backend" key (empty: partbench-cpu-engine).
	Engine, Backend string
}

// ServingMeasureGrid is the comparison: one row per metric.
func ServingMeasureGrid(d *ServingMeasureDoc) Grid {
	hw := d.Hardware
	if d.Calibration != "" {
		hw += " (" + d.Calibration + ")"
	}
	engine := "this machine's CPU engine"
	if d.Backend != "" {
		engine = "the " + d.Backend
	}
	g := Grid{Title: fmt.Sprintf("Serving, measured on %s and modeled: %s (%s; model hardware %s)", engine, d.Config, d.Workload, hw),
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
		fmt.Sprintf("%s scheduler, %d slots, %d batched tokens; the engine runs %s, and the model prices it so",
			d.Scheduler.Policy, d.Scheduler.MaxNumSeqs, d.Scheduler.MaxNumBatchedTokens, cmp.Or(d.Engine, "each scheduled sequence's pass in turn")))
	if d.Calibration == "" {
		g.Notes = append(g.Notes, "the model uses the config's hardware, not this CPU: give --calibration FILE from 'partbench calibrate' to model this machine")
	}
	return g
}

// ServingMeasureJSON writes the comparison under partbench.serving/v1.
func ServingMeasureJSON(w io.Writer, version string, d *ServingMeasureDoc) error {
	doc := map[string]any{"schema": ServingSchema, "version": version, "model_id": d.Config, "model_hardware": d.Hardware,
		"calibration": d.Calibration, "workload": d.Workload, "backend": cmp.Or(d.Backend, "partbench-cpu-engine"), "engine": cmp.Or(d.Engine, "each scheduled sequence's pass in turn"),
		"measured":   servingResult(&ServingDoc{}, serving.Point{RequestRate: math.NaN(), Metrics: d.Measured}),
		"modeled":    servingResult(&ServingDoc{}, serving.Point{RequestRate: math.NaN(), Metrics: d.Modeled}),
		"comparison": d.Errors}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
