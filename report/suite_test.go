package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/suite"
)

// The latency figure draws the interval stats computed, not a bound made
// up for the axis; what it cannot draw it marks as clipped.
func TestSuiteErrBar(t *testing.T) {
	for _, c := range []struct {
		name            string
		s               stats.Summary
		scale           float64
		logY            bool
		y, below, above float64
		clipped, ok     bool
	}{
		// Latency 2 ms [1, 8] ms on a log axis in ms: bars 1 below, 6 above.
		{"log interval", stats.Summary{N: 3, Mean: 2e-3, CILow: 1e-3, CIHigh: 8e-3, CIScale: "log"}, 1e3, true, 2, 1, 6, false, true},
		// A bound at 0 cannot be drawn on a log axis: no lower bar, marked.
		{"zero bound on log", stats.Summary{N: 3, Mean: 2, CILow: 0, CIHigh: 3, CIClipped: true}, 1, true, 2, 0, 1, true, true},
		{"negative bound on log", stats.Summary{N: 3, Mean: 2, CILow: -1, CIHigh: 5}, 1, true, 2, 0, 3, true, true},
		// A utilization whose t interval stats clipped at 1 (in %): drawn
		// to the bound and marked.
		{"clipped fraction", stats.Summary{N: 2, Mean: 0.98, CILow: 0.9, CIHigh: 1, CIClipped: true}, 100, false, 98, 8, 2, true, true},
		{"zero on log", stats.Summary{N: 3}, 1, true, 0, 0, 0, false, false},
	} {
		y, lo, hi, clipped, ok := suiteErrBar(c.s, c.scale, c.logY)
		if ok != c.ok || clipped != c.clipped || !nearly(y, c.y) || !nearly(lo, c.below) || !nearly(hi, c.above) {
			t.Errorf("%s: %g −%g +%g clipped %v ok %v, want %g −%g +%g clipped %v ok %v", c.name, y, lo, hi, clipped, ok, c.y, c.below, c.above, c.clipped, c.ok)
		}
	}
}

func nearly(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// The summary names the error's definition in its header and prints the
// sign stats.ModelError gives: a model 25 % under the measurement is −25 %.
func TestSuiteMarkdownErrorSign(t *testing.T) {
	lat := stats.Summarize([]float64{1, 2, 3}, stats.Positive)
	r := &suite.Results{Spec: "t", Hardware: "h100", Link: "loopback", Backend: "cpu", Runs: 3,
		Cells: []suite.CellResult{{Cell: "local/smoke", LatencyS: lat, ModeledS: 1.5, ModelErr: -0.25}}}
	var b bytes.Buffer
	if err := SuiteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "model error (model−meas)/meas") {
		t.Errorf("header does not name the error's definition:\n%s", out)
	}
	// Mean 2000 ms with its log-scale interval, median 2000, modeled 1500, −25 %.
	want := "| local/smoke | 3 | 2000 ["
	if !strings.Contains(out, want) || !strings.Contains(out, "| 2000 | 1500 | -25 % |") {
		t.Errorf("row does not read mean [interval], median, modeled, −25 %%:\n%s", out)
	}
}
