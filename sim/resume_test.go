package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// TestEstimateResume on the seed's shape: the activation is 2,048 rows ×
// 5,120 × 2 B = 20,971,520 B; its PCIe floor at 64 GB/s (Gen5 x16) is
// 0.3277 ms. Recompute grows with N and stays above the compute floor;
// offload and stateful are flat; the crossover is the first layer where
// recompute exceeds each.
func TestEstimateResume(t *testing.T) {
	cfg, err := configs.Load("llama2-13b-2k")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	link, err := topology.ParseClientLink("link", "loopback")
	if err != nil {
		t.Fatal(err)
	}
	e, err := EstimateResume(plan, ResumeOptions{Layers: []int{1, 10, 20, 30, 40}, Client: link}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.ActivationBytes != 20971520 {
		t.Errorf("activation %d B, want 2048·5120·2 = 20971520", e.ActivationBytes)
	}
	if math.Abs(e.PCIeFloorS-20971520/topology.PCIeBytesPerS(5, 16)) > 1e-12 || e.PCIeFloorS < 3.2e-4 || e.PCIeFloorS > 3.4e-4 {
		t.Errorf("PCIe floor %g s", e.PCIeFloorS)
	}
	if len(e.Points) != 5 {
		t.Fatalf("%d points", len(e.Points))
	}
	for i, p := range e.Points {
		if p.RecomputeS < p.ComputeFloorS || (i > 0 && p.RecomputeS <= e.Points[i-1].RecomputeS) {
			t.Errorf("layer %d: recompute %g s (floor %g s) not increasing above its floor", p.Layer, p.RecomputeS, p.ComputeFloorS)
		}
		if p.OffloadS != e.Points[0].OffloadS || p.StatefulS != e.Points[0].StatefulS {
			t.Errorf("layer %d: O(1) strategies vary", p.Layer)
		}
	}
	// The 40-layer compute floor: 40 layers of 2·2048·(4·5120² + 3·5120·13824)
	// GEMM FLOPs ≈ 5.20e13, plus attention, over 989 TFLOP/s ≈ 53 ms.
	if f := e.Points[4].ComputeFloorS; f < 0.052 || f > 0.056 {
		t.Errorf("40-layer compute floor %g s, want ≈ 0.053", f)
	}
	for _, st := range []string{partition.ResumeOffload, partition.ResumeStateful} {
		n := e.Crossover[st]
		if n < 1 || n > 40 {
			t.Fatalf("%s crossover %d", st, n)
		}
		// Recompute at the crossover exceeds the strategy, one layer before it does not.
		all, _ := EstimateResume(plan, ResumeOptions{Layers: []int{max(n-1, 1), n}, Client: link}, Options{})
		v := all.Points[len(all.Points)-1].OffloadS
		if st == partition.ResumeStateful {
			v = all.Points[len(all.Points)-1].StatefulS
		}
		if all.Points[len(all.Points)-1].RecomputeS <= v || (n > 1 && all.Points[0].RecomputeS > v) {
			t.Errorf("%s crossover %d is not the first layer where recompute exceeds %g s", st, n, v)
		}
	}
	if _, err := EstimateResume(plan, ResumeOptions{Layers: []int{41}, Client: link}, Options{}); err == nil {
		t.Error("layer 41 of 40 accepted")
	}
}
