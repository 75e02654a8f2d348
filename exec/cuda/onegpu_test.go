package cuda

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// oneGPUPlan is the plan of the config named name whose [model],
// [workload] and [parallel] tables are body, on one H100-class GPU: one
// node of one GPU (its links never used), one warm-up and three measured
// iterations, seed 1.
func oneGPUPlan(t *testing.T, name, body string) *partition.Plan {
	t.Helper()
	src := "version = 1\nname = \"" + name + "\"\n" + body + `[topology]
name = "one-gpu"
nodes = 1
gpus_per_node = 1
[topology.intra_node]
class = "nvlink"
name = "none (one GPU)"
bytes_per_s = 450e9
latency_s = 1.0e-6
[topology.inter_node]
class = "network"
name = "none (one node)"
bytes_per_s = 50e9
latency_s = 5.0e-6
[hardware]
preset = "h100-sxm"
[run]
warmup = 1
iterations = 3
seed = 1
`
	cfg, err := configs.Parse(strings.NewReader(src), name+" (test)")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// The GPU-only tests' one-GPU configs parse and plan on any machine: the
// seed layers at 4 layers (hidden 4096, ffn 16384, 32 heads) and a GPT-2
// XL layer (hidden 1600, 25 heads of 64, ffn 6400), one rank each.
func TestOneGPUPlans(t *testing.T) {
	for _, tc := range []struct {
		plan                  *partition.Plan
		layers, hidden, heads int
	}{
		{seed4Config(t, 16), 4, 4096, 32},
		{biasPlan(t, 1600, 25, 64, 6400, 2, 64, 1024), 1, 1600, 25},
	} {
		m := tc.plan.Config.Model
		if len(tc.plan.Ranks) != 1 || m.Layers != tc.layers || m.Hidden != tc.hidden || m.Heads != tc.heads {
			t.Errorf("%s: %d ranks, %d layers, hidden %d, %d heads; want 1, %d, %d, %d",
				tc.plan.Config.Name, len(tc.plan.Ranks), m.Layers, m.Hidden, m.Heads, tc.layers, tc.hidden, tc.heads)
		}
	}
}
