package shards

import (
	"testing"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// openDir is checkpoint directory dir's config and weights, the weights
// closed at the test's end.
func openDir(t testing.TB, dir string) (*checkpoint.Config, *checkpoint.Weights) {
	t.Helper()
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := checkpoint.OpenWeights(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return hf, w
}

// planOf is the plan of dir's checkpoint at tensor-parallel degree tp and
// pp stages, in the tests' shape (one sequence, a 16-token prompt, 8 new
// tokens).
func planOf(t testing.TB, dir string, tp, pp int) *partition.Plan {
	t.Helper()
	cfg, err := configs.GenerateConfig(dir, 1, 16, 8, tp, pp, 1)
	if err != nil {
		t.Fatalf("%s tp%d pp%d: %v", dir, tp, pp, err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatalf("%s tp%d pp%d: %v", dir, tp, pp, err)
	}
	return plan
}
