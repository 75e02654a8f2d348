package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trace stats reads the trace model --trace writes and sums it exactly:
// every op of a process appears once, counts add up to the trace's
// complete events, and shares add up to 100 %.
func TestTraceStatsOfAModelTrace(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "model.json")
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/single-tiny", "--trace", tr); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph  string  `json:"ph"`
			Dur float64 `json:"dur"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	complete, totalUs := 0, 0.0
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			complete++
			totalUs += e.Dur
		}
	}
	out, err := runCLI(t, "trace", "stats", tr, "--by", "kind", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema string `json:"schema"`
		Rows   []struct {
			Process string  `json:"process"`
			Count   int     `json:"count"`
			TotalS  float64 `json:"total_s"`
			Percent float64 `json:"percent"`
		} `json:"rows"`
		Pairs []any `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Schema != "partbench.tracestats/v1" || len(got.Rows) == 0 || len(got.Pairs) != 0 {
		t.Fatalf("schema %q, %d rows, %d pairs", got.Schema, len(got.Rows), len(got.Pairs))
	}
	n, sum, share := 0, 0.0, 0.0
	for _, r := range got.Rows {
		n += r.Count
		sum += r.TotalS
		share += r.Percent
	}
	if n != complete || sum*1e6 < totalUs*(1-1e-9) || sum*1e6 > totalUs*(1+1e-9) || share < 99.999 || share > 100.001 {
		t.Errorf("rows sum to %d events, %g µs, %g %%; the trace holds %d events, %g µs", n, sum*1e6, share, complete, totalUs)
	}
	// The table names the error's sign, and refusals name the flag or file.
	if _, err := runCLI(t, "trace", "stats", tr, "--by", "size"); err == nil || !strings.Contains(err.Error(), "--by") {
		t.Errorf("--by size: %v", err)
	}
	if _, err := runCLI(t, "trace", "stats", filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
}
