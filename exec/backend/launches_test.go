package backend

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// The GPU backend counts launches without a device; the CPU backend,
// which queues nothing, is refused naming the one that does. One decode
// pass of test/single-tiny (batch 4 in one micro-batch, 8 layers) counted
// from position unknown: embed 3 (position memset, prompt ids, embed);
// per layer 2 norms, 4 GEMMs, act, 2 residuals and attention (rope +
// kernel) = 11, where the decode Program fuses each residual with the
// norm after it (fuse.go): the 15 norms after a residual inside the
// layers launch nothing, 8 × 11 − 15 = 73, and the final norm, after the
// last residual, nothing either; LM head 1, sample 3 (teacher, logits
// copy, argmax): 3 + 73 + 0 + 1 + 3 = 80.
func TestLaunchCounterThroughTheRegistry(t *testing.T) {
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := Default()
	if _, err := r.LaunchCounter("cpu", plan, 0); err == nil || !strings.Contains(err.Error(), "backend cpu counts no launches (backends that do: cuda)") {
		t.Errorf("cpu: %v", err)
	}
	lc, err := r.LaunchCounter("cuda", plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	ops := plan.Pass(0, partition.Decode, 0, plan.MicrobatchSize, 1, 5, true)
	for round := range 2 {
		lc.Reset()
		for i := range ops {
			lc.Exec(&ops[i], 5)
		}
		if got := lc.Launches(); got != 80 {
			t.Errorf("round %d: %d launches, want 80", round, got)
		}
	}
}
