package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// tp2pp2-tiny on h100-sxm (kernel_launch_s 6 µs, step_overhead_s 2 ms,
// graph_launch_s 10 µs, graph_kernel_s 1.5 µs), 2 micro-batches, 4 layers
// per stage. A layer has 10 compute kernels (2 norms, 4 GEMMs, attention,
// activation, 2 residuals). Per micro-batch of a decode step:
//
//	stage 0: input + 4 × 10                             = 41 kernels
//	stage 1: 4 × 10 + final norm + LM head + sample     = 43 kernels, 1 sample
//
// so per step stage 0 has 82 kernels and stage 1 86 and 2 samples.
func TestFixedCostsPerRankHandDerived(t *testing.T) {
	for _, tc := range []struct {
		graphs                     bool
		kernel, graphLaunch        float64
		stage0, stage1             float64 // total fixed seconds per decode step
		stage0Kernels, stage1Kerns int
	}{
		// 82 × 6 µs = 492 µs; 86 × 6 µs + 2 × 2 ms = 4.516 ms.
		{false, 6e-6, 0, 492e-6, 4.516e-3, 82, 86},
		// graphed: 82 × 1.5 µs = 123 µs; 86 × 1.5 µs + 2 × (2 ms + 10 µs) = 4.149 ms.
		{true, 1.5e-6, 10e-6, 123e-6, 4.149e-3, 82, 86},
	} {
		e := estimate(t, "test/tp2pp2-tiny", func(c *configs.Config) { c.Hardware.CUDAGraphs = tc.graphs })
		for _, r := range e.Ranks.All() {
			f := r.DecodeFixed
			want, kernels, samples := tc.stage0, tc.stage0Kernels, 0.0
			if r.Stage == 1 {
				want, kernels, samples = tc.stage1, tc.stage1Kerns, 2
			}
			if f.Kernels != kernels || math.Abs(f.TotalS-want) > 1e-12 || math.Abs(f.LaunchS-float64(kernels)*tc.kernel) > 1e-12 ||
				math.Abs(f.StepOverheadS-samples*2e-3) > 1e-12 || math.Abs(f.GraphLaunchS-samples*tc.graphLaunch) > 1e-12 {
				t.Errorf("graphs %v rank %d: %+v, want %d kernels, %g s in all", tc.graphs, r.Rank, f, kernels, want)
			}
			// The same total as computeCost's FixedS over the Program's
			// compute ops (the number the timeline adds).
			prog := e.Plan.Program(r.Rank, partition.Decode)
			var sum float64
			for i := range prog.Ops {
				if _, comm := prog.Ops[i].Kind.Comm(); !comm {
					sum += computeCost(&e.Plan.System.GPU, e.DType, &prog.Ops[i], 1, false, partition.Decode).FixedS
				}
			}
			if math.Abs(sum-f.TotalS) > 1e-12 {
				t.Errorf("graphs %v rank %d: fixed %g s, computeCost's FixedS sum %g s", tc.graphs, r.Rank, f.TotalS, sum)
			}
			// Fixed costs are part of the modeled step: never more than it.
			if f.TotalS > e.Decode.TPOTS {
				t.Errorf("rank %d: fixed %g s above TPOT %g s", r.Rank, f.TotalS, e.Decode.TPOTS)
			}
		}
	}
}
