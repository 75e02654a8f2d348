package suite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/remote/server"
)

// quickInProcess is the quick spec with every server in this process (the
// spawned-server path is the command's e2e test).
func quickInProcess(t *testing.T) (*Spec, Dialer) {
	t.Helper()
	s, err := Load("quick")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewInProcess(server.NewCPUEngine(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return s, p.Dial
}

func TestRunAndResume(t *testing.T) {
	s, dial := quickInProcess(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stopAt := 23 // inside the second workload's cells
	o := Options{Spec: s, Dir: dir, Engine: server.NewCPUEngine(), Dial: dial, Backend: "cpu",
		Progress: func(done, total int, _ string) {
			if done == stopAt {
				cancel()
			}
		}}
	if _, err := Run(ctx, o); !errors.Is(err, context.Canceled) && (err == nil || !strings.Contains(err.Error(), "canceled")) {
		t.Fatalf("interrupted run: got %v, want cancellation", err)
	}
	recs, _, err := ReadLog(filepath.Join(dir, RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != stopAt {
		t.Fatalf("log holds %d runs after %d finished", len(recs), stopAt)
	}
	// A torn line (killed mid-write) is cut, not read.
	f, _ := os.OpenFile(filepath.Join(dir, RunsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"spec":"quick","cell":"lo`)
	f.Close()

	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("a second run without --resume: got %v, want a refusal naming --resume", err)
	}
	o.Resume, o.Progress = true, nil
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	per := s.Warmup + s.Runs // 4 runs a cell
	// 23 runs = 5 complete cells (20) + cell 6's warm-up and 2 measured runs.
	if out.SkippedCells != 5 || out.Total != 25*per || out.Mismatches != 0 {
		t.Errorf("resume: %+v, want 5 cells skipped of 25, no byte mismatches", out)
	}
	// Cell 6 redoes its warm-up and runs its one missing measured run.
	if want := 25*per - 20 - 2; out.Ran != want {
		t.Errorf("resume ran %d runs, want %d", out.Ran, want)
	}
	recs, _, err = ReadLog(filepath.Join(dir, RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Measured(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 25*s.Runs {
		t.Errorf("%d measured runs, want %d", len(m), 25*s.Runs)
	}
	for _, r := range m {
		if r.LatencyS <= 0 || r.ModeledS <= 0 {
			t.Errorf("%s run %d: latency %g, modeled %g", r.Cell, r.Run, r.LatencyS, r.ModeledS)
		}
		if r.NetBytes != r.ModelBytes {
			t.Errorf("%s: measured %g B, model %g B", r.Cell, r.NetBytes, r.ModelBytes)
		}
		if (r.Mode == "local") != (r.NetBytes == 0) {
			t.Errorf("%s: %g B (local moves none, remote modes some)", r.Cell, r.NetBytes)
		}
	}
}
