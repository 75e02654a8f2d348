package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/partbench/partbench/resume"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
)

// TestResumeFiles: a written resume.json is recognised by ResumeFigureFile
// and drawn as two panels; another schema is left to the caller.
func TestResumeFiles(t *testing.T) {
	dir := t.TempDir()
	d := &ResumeDoc{Measured: &resume.Result{Config: "c", Backend: "cpu", Trials: 1,
		Results: []resume.Row{{Strategy: "recompute", Layer: 1, ResumeLatency: stats.Summary{N: 1, Mean: 1e-3}}}},
		Model: &sim.ResumeEstimate{Config: "c", Points: []sim.ResumePoint{{Layer: 1, RecomputeS: 1e-3, OffloadS: 1e-4, StatefulS: 1e-4, ComputeFloorS: 1e-4}}, Crossover: map[string]int{}}}
	if err := WriteResumeFiles(dir, d); err != nil {
		t.Fatal(err)
	}
	fig, ok, err := ResumeFigureFile(filepath.Join(dir, "resume.json"))
	if err != nil || !ok || len(fig.Panels) != 2 {
		t.Fatalf("figure %v ok %v err %v", fig, ok, err)
	}
	var b bytes.Buffer
	if err := fig.Write(&b, "svg"); err != nil || b.Len() == 0 {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "resume.csv"))
	if err != nil || !bytes.Contains(csv, []byte("recompute,1,1.000")) {
		t.Errorf("csv %q, %v", csv, err)
	}
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"schema":"partbench.model/v1"}`), 0o644)
	if _, ok, err := ResumeFigureFile(other); ok || err != nil {
		t.Errorf("another schema: ok %v err %v", ok, err)
	}
}
