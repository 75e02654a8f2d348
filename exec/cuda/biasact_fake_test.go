//go:build cgo

package cuda

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/partition"
)

// On the fake driver, GPT-2's up projection (L0i.w_up, bias b_up) and the
// GELU after it (L0i.act) run as the GEMM and one pb_bias_act instead of
// the GEMM, pb_bias and pb_act. Hand count, gpt2-tiny (L = 2): one launch
// fewer per layer, 2 per prefill pass and 2 per decode step; the other
// biased GEMMs (wqkv, wo, w_down) keep their pb_bias, and the timing
// entries say which op carried the bias. single-tiny (gated SiLU, no
// biases) plans nothing. Without cublaslt, so the fakes' cuBLASLt does not
// take the biases into its epilogue.
func TestBiasActOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	if plan.Model.Layers != 2 {
		t.Fatalf("gpt2-tiny has %d layers, the count assumes 2", plan.Model.Layers)
	}
	var pre, dec [2]int64
	for i, without := range []string{"cublaslt", "cublaslt,bias-act"} {
		c := fakeCompute(t, plan, 0, Options{DType: "fp16", Without: without})
		preNames, decNames := runPrefillDecode(t, c, plan, &pre[i], &dec[i])
		fused := i == 0
		for _, names := range [][]string{preNames, decNames} {
			for _, e := range []struct {
				name string
				want bool
			}{
				{"L00.w_up [bias in L00.act]", fused},
				{"L00.act [+bias of L00.w_up]", fused},
				{"L01.w_up [bias in L01.act]", fused},
				{"L01.act [+bias of L01.w_up]", fused},
				{"L00.w_up", !fused},
				{"L00.act", !fused},
				{"L00.w_down", true},
			} {
				if got := slices.Contains(names, e.name); got != e.want {
					t.Errorf("Without %q: timing entry %q present %v, want %v (entries %s)", without, e.name, got, e.want, strings.Join(names, ", "))
				}
			}
		}
		if fused && len(c.biasAct.next) != 4 { // w_up of 2 layers, prefill and decode
			t.Errorf("%d fusions planned, want 4", len(c.biasAct.next))
		}
	}
	if d := pre[1] - pre[0]; d != 2 {
		t.Errorf("prefill: %d launches fused, %d unfused: %d saved, want 2", pre[0], pre[1], d)
	}
	if d := dec[1] - dec[0]; d != 2 {
		t.Errorf("decode: %d launches fused, %d unfused: %d saved, want 2", dec[0], dec[1], d)
	}
	if c := fakeCompute(t, tinyPlan(t, "test/single-tiny"), 0, Options{DType: "fp16"}); len(c.biasAct.next) != 0 {
		t.Errorf("single-tiny: %d bias-act fusions planned, want none", len(c.biasAct.next))
	}
}

// The bias a GEMM leaves to its activation reaches u before any other op
// runs: launches per op of gpt2-tiny's layer 0, in order, with the hand
// count beside each. w_up leaves its bias (1: the GEMM); w_down run before
// the activation first adds the pending bias with pb_bias (3: pb_bias,
// its GEMM, its own pb_bias); the activation then runs alone (1: pb_act).
// w_up again (1), the activation (1: pb_bias_act), the activation again
// (1: pb_bias_act, u still lacks the bias), w_down (2: the bias was
// consumed, nothing to add).
func TestBiasActOutOfOrderOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "fp16", Without: "cublaslt"})
	prog := plan.Program(0, partition.Prefill)
	get := func(name string) *partition.Op { return opNamed(t, prog, name) }
	up, act, down := get("L00.w_up"), get("L00.act"), get("L00.w_down")
	expectLaunches(t, c, []launchStep{{up, 1}, {down, 3}, {act, 1}, {up, 1}, {act, 1}, {act, 1}, {down, 2}})
}

// The plan fuses only where u is dead after the activation: a Program in
// which an op reads u after it (here the activation's input renamed onto
// a buffer a later op reads) keeps the pair apart.
func TestBiasActFusableNeedsDeadOutput(t *testing.T) {
	plan := tinyPlan(t, "test/gpt2-tiny")
	ops := slices.Clone(plan.Program(0, partition.Prefill).Ops)
	i := slices.IndexFunc(ops, func(op partition.Op) bool { return op.Name == "L00.w_up" })
	if i < 0 || !biasActFusable(ops, i) {
		t.Fatalf("L00.w_up (at %d) is not fusable in gpt2-tiny's prefill", i)
	}
	// w_down reads u instead of a: u is read after the activation.
	j := slices.IndexFunc(ops, func(op partition.Op) bool { return op.Name == "L00.w_down" })
	ops[j].In = ops[i].Out
	if biasActFusable(ops, i) {
		t.Error("fusable although w_down reads u after the activation")
	}
	ops[j].In = ops[i+1].Out
	ops[i+1].MLP = 0 // not tanh-GELU
	if biasActFusable(ops, i) {
		t.Error("fusable although the activation is not tanh-GELU")
	}
}

// launchStep is one op run by expectLaunches and the launches it must
// queue.
type launchStep struct {
	op   *partition.Op
	want int64
}

// expectLaunches runs steps' ops in order on c (cache position 0) and
// checks each queued its step's launches.
func expectLaunches(t *testing.T, c *Compute, steps []launchStep) {
	t.Helper()
	for i, s := range steps {
		before := c.LaunchStats().Launches
		if err := c.Exec(context.Background(), s.op, 0); err != nil {
			t.Fatal(err)
		}
		if got := c.LaunchStats().Launches - before; got != s.want {
			t.Errorf("step %d (%s): %d launches, want %d", i, s.op.Name, got, s.want)
		}
	}
}

// runPrefillDecode runs plan's prefill, then a decode step after the
// prompt, on c, and gives the names runPhase timed in each and, in pre and
// dec, the launches each queued.
func runPrefillDecode(t *testing.T, c *Compute, plan *partition.Plan, pre, dec *int64) (preNames, decNames []string) {
	t.Helper()
	n0 := c.LaunchStats().Launches
	preNames = runPhase(t, c, plan, partition.Prefill, 0)
	n1 := c.LaunchStats().Launches
	if err := c.ResetTimes(); err != nil {
		t.Fatal(err)
	}
	n2 := c.LaunchStats().Launches
	decNames = runPhase(t, c, plan, partition.Decode, plan.Config.Workload.PromptTokens())
	*pre, *dec = n1-n0, c.LaunchStats().Launches-n2
	return preNames, decNames
}
