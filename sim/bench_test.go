package sim

import (
	"strings"
	"testing"
)

// Bad counts name their flag; two runs on 64 GPUs enumerate the same
// candidates each time as one Search of the same spec does.
func TestBenchSearch(t *testing.T) {
	for _, c := range []struct {
		gpus, runs int
		want       string
	}{
		{64, 0, "--runs: must be ≥ 1 (got 0)"},
		{12, 1, "--gpus: must be a multiple of 8 in [8, 32768] (got 12)"},
		{0, 1, "--gpus: must be a multiple of 8 in [8, 32768] (got 0)"},
		{8*4096 + 8, 1, "--gpus: must be a multiple of 8 in [8, 32768] (got 32776)"},
	} {
		if _, _, err := BenchSearch(c.gpus, c.runs); err == nil || err.Error() != c.want {
			t.Errorf("BenchSearch(%d, %d): %v, want %q", c.gpus, c.runs, err, c.want)
		}
	}
	spec, runs, err := BenchSearch(64, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Search(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	for i, r := range runs {
		if r.Enumerated != res.Enumerated || r.Feasible != res.Feasible || r.PrunedMemory != res.PrunedMemory || !(r.ElapsedS > 0) {
			t.Errorf("run %d: %+v, want %d/%d/%d and a positive time", i+1, r, res.Enumerated, res.Feasible, res.PrunedMemory)
		}
		if res.Feasible > 0 && (r.Best == "" || !strings.Contains(r.Best, "tp")) {
			t.Errorf("run %d: best %q, want the top candidate's name", i+1, r.Best)
		}
	}
}
