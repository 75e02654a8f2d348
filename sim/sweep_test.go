package sim

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

func TestSweepEstimatesEachValueAndNamesSkips(t *testing.T) {
	cfg, err := configs.Load("test/tp2pp2-tiny") // batch 4
	if err != nil {
		t.Fatal(err)
	}
	// 4 divides the batch of 4; 3 does not, so that point is skipped.
	pts := Sweep([]*configs.Config{cfg}, "microbatches", []int{4, 3}, Options{})
	if len(pts) != 2 || pts[0].Value != 4 || len(pts[0].Strategies) != 1 || len(pts[0].Skipped) != 0 {
		t.Fatalf("points %+v", pts)
	}
	at8, err := cfg.With("microbatches", 4)
	if err != nil {
		t.Fatal(err)
	}
	want, err := EstimateConfig(at8, Options{})
	if err != nil || !reflect.DeepEqual(pts[0].Strategies[0], want) {
		t.Errorf("microbatches = 4: the sweep's estimate differs from EstimateConfig of the same config (%v)", err)
	}
	if wantSkip := []string{"tp2pp2-tiny: tp2pp2-tiny with microbatches = 3: parallel.microbatches: must divide workload.batch = 4 (got 3)"}; len(pts[1].Strategies) != 0 || !reflect.DeepEqual(pts[1].Skipped, wantSkip) {
		t.Errorf("microbatches = 3: %d estimates, skipped %q, want %q", len(pts[1].Strategies), pts[1].Skipped, wantSkip)
	}
}
