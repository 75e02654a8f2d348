//go:build cgo

package cuda

import (
	"context"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/partition"
)

// LaunchCounter, run over the same ops as a Compute on the fake driver,
// counts what the Compute queued (LaunchStats.Launches): a prefill and
// three decode steps of every micro-batch, op by op, for a llama-style
// config (RMSNorm, rotary, gated MLP, no bias) and a GPT-2-style one
// (LayerNorm, learned positions, biases); a second prefill at the same
// position sets no position again. The counts differ between the passes
// (positions, fused norms), so a counter that ignored either would fail.
// The GPT-2 config's biases are counted as pb_bias after each GEMM, so it
// runs without cuBLASLt and pb_bias_act, which would fold them into the
// GEMM's epilogue or the activation (OpLaunches leaves those paths out).
func TestLaunchCounterMatchesTheComputeOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	for _, c := range []struct{ name, without string }{{"test/single-tiny", ""}, {"test/gpt2-tiny", "cublaslt,bias-act"}} {
		name := c.name
		plan := tinyPlan(t, name)
		c := fakeCompute(t, plan, 0, Options{NoTiming: true, Without: c.without})
		lc := NewLaunchCounter(plan, 0)
		ctx := context.Background()
		pass := func(phase partition.Phase, q, past int) {
			for mb := 0; mb < plan.Microbatches; mb++ {
				ops := plan.Pass(0, phase, mb, plan.MicrobatchSize, q, past, true)
				before, counted := c.LaunchStats().Launches, lc.Launches()
				for i := range ops {
					if err := c.Exec(ctx, &ops[i], past); err != nil {
						t.Fatal(err)
					}
					lc.Exec(&ops[i], past)
				}
				got, want := lc.Launches()-counted, int(c.LaunchStats().Launches-before)
				if got != want || want == 0 {
					t.Errorf("%s %s mb %d q %d past %d: counted %d launches, the Compute queued %d", name, phase, mb, q, past, got, want)
				}
			}
		}
		q := plan.PrefillChunk
		pass(partition.Prefill, q, 0)
		pass(partition.Prefill, q, 0)
		for step := range 3 {
			pass(partition.Decode, 1, q+step)
		}
	}
}
