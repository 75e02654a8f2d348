package report

import (
	"errors"
	"io"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/sim"
)

// WriteModelTrace writes the simulated timelines of es as one
// Chrome/Perfetto trace to path, atomically: prefill and the first
// TraceDecodeSteps decode steps of each, or every step when full.
func WriteModelTrace(path string, es []*sim.Estimate, full bool) error {
	steps := TraceDecodeSteps
	if full {
		steps = -1
	}
	var spans []Span
	for _, e := range es {
		spans = append(spans, EstimateSpansUpTo(e, steps)...)
	}
	return WriteFileAtomic(path, func(w io.Writer) error { return ChromeTrace(w, spans) })
}

// WriteRunTrace writes a run's measured timeline (process "name
// (measured)") beside its estimate's as one Chrome/Perfetto trace to path,
// atomically. The modeled side covers as many decode steps as the measured
// one recorded, so the two tracks hold the same ops. Where the measured
// decode steps ran as device graphs, the same steps traced op by op in one
// more iteration are a third process.
func WriteRunTrace(path, name string, ranks []exec.RankResult, e *sim.Estimate) error {
	steps := 0
	for _, r := range ranks {
		for _, s := range r.Spans {
			steps = max(steps, s.Step+1)
		}
	}
	spans := append(RunSpans(name+" (measured)", ranks), EstimateSpansUpTo(e, steps)...)
	// Decode steps that ran as device graphs, traced op by op once more.
	spans = append(spans, RunOpSpans(name+" (op by op, after the measured iterations)", ranks)...)
	return WriteFileAtomic(path, func(w io.Writer) error { return ChromeTrace(w, spans) })
}

// WriteChecks prints each check's table in format (command and version
// head a document), then returns the checks' failures joined: nil when
// every one passed.
func WriteChecks(w io.Writer, format, command, version string, results ...exec.CheckResult) error {
	var grids []Grid
	var failed []error
	for _, r := range results {
		grids = append(grids, CheckGrid(r))
		if err := r.Err(); err != nil {
			failed = append(failed, err)
		}
	}
	if err := WriteTables(w, format, command, version, grids...); err != nil {
		return err
	}
	return errors.Join(failed...)
}
