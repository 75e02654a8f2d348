package cpu_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// hfConfig is a config running the model in dir (model.dir) in fp32 with
// tp × pp ranks on one node.
func hfConfig(t *testing.T, dir string, tp, pp, microbatches int, layerMap []int) *configs.Config {
	t.Helper()
	lm := ""
	if layerMap != nil {
		lm = "layer_map = " + strings.ReplaceAll(fmt.Sprint(layerMap), " ", ", ")
	}
	src := fmt.Sprintf(`version = 1
name = "hf-%d-%d"
[model]
dir = %q
dtype = "fp32"
[workload]
batch = 2
context = 16
output_tokens = 8
[parallel]
tp = %d
pp = %d
microbatches = %d
%s
[hardware]
preset = "h100-sxm"
[topology]
name = "local"
nodes = 1
gpus_per_node = %d
[topology.intra_node]
class = "nvlink"
name = "NVLink"
bytes_per_s = 450e9
latency_s = 1e-6
[run]
iterations = 1
`, tp, pp, dir, tp, pp, microbatches, lm, tp*pp)
	cfg, err := configs.Parse(strings.NewReader(src), filepath.Join(t.TempDir(), "hf.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// hfCompute builds ranks whose weights are their slices of the checkpoint.
func hfCompute(t *testing.T, dir string) func(*partition.Plan, int, *model.Inputs) (pexec.Compute, error) {
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
	return cpu.FromCheckpoint(w, hf)
}

var partitionings = []struct {
	name        string
	tp, pp, mbs int
	layerMap    []int
}{
	{"single", 1, 1, 1, nil},
	{"tp2", 2, 1, 1, nil},
	{"pp2", 1, 2, 1, nil},
	{"tp2pp2", 2, 2, 2, nil},
	// Layer-wise: one layer per stage (the fixtures have 2 layers), each
	// sequence its own micro-batch.
	{"layerwise", 1, 2, 2, []int{0, 1}},
}

// logitsTol is the bound on |partbench − transformers| over every logit:
// both are fp32, the fixtures' logits are O(1) and rounded to 6 decimals
// (±5e-7), and float32 sums over hidden 64 / ffn 256 in different orders
// differ by a few ulps of O(1) values.
const logitsTol = 1e-4

// TestHuggingFaceFixtures runs transformers' tiny Llama and GPT-2 from
// their safetensors under every partitioning the shapes allow and compares
// with reference.json: the logits at every prompt position (stepwise
// prompt, KV cache) within logitsTol max abs, the last position's logits
// after a whole-prompt prefill within logitsTol, and the 8 greedy tokens
// identical (whole-prompt prefill, then decode with the KV cache).
func TestHuggingFaceFixtures(t *testing.T) {
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		dir := checkpointtest.Dir(t, fx)
		ref := checkpointtest.ReadReference(t, dir)
		newCompute := hfCompute(t, dir)
		for _, p := range partitionings {
			t.Run(fx+"/"+p.name, func(t *testing.T) {
				cfg := hfConfig(t, dir, p.tp, p.pp, p.mbs, p.layerMap)
				opts := pexec.GenerateOptions{NewTokens: len(ref.GreedyIDs[0]), NewCompute: newCompute, NewComms: localcomm.Comms}
				whole, err := pexec.Generate(context.Background(), cfg, ref.PromptIDs, opts)
				if err != nil {
					t.Fatal(err)
				}
				opts.Stepwise = true
				step, err := pexec.Generate(context.Background(), cfg, ref.PromptIDs, opts)
				if err != nil {
					t.Fatal(err)
				}
				for seq := range ref.PromptIDs {
					if !slices.Equal(whole.GreedyIDs[seq], ref.GreedyIDs[seq]) {
						t.Errorf("sequence %d: greedy %v, transformers %v", seq, whole.GreedyIDs[seq], ref.GreedyIDs[seq])
					}
					if !slices.Equal(step.GreedyIDs[seq], ref.GreedyIDs[seq]) {
						t.Errorf("sequence %d (stepwise prompt): greedy %v, transformers %v", seq, step.GreedyIDs[seq], ref.GreedyIDs[seq])
					}
				}
				P := len(ref.PromptIDs[0])
				worst := 0.0
				check := func(what string, got [][][]float32, first int) {
					for seq := range got {
						if len(got[seq]) != P-first {
							t.Fatalf("%s: sequence %d has logits at %d positions, want %d", what, seq, len(got[seq]), P-first)
						}
						for k, row := range got[seq] {
							want := ref.Logits[seq][first+k]
							if len(row) != len(want) {
								t.Fatalf("%s: %d logits, transformers %d", what, len(row), len(want))
							}
							for v := range row {
								d := math.Abs(float64(row[v]) - want[v])
								if !(d <= logitsTol) {
									t.Fatalf("%s: sequence %d position %d id %d: %g, transformers %g (|Δ| %.3g > %g)", what, seq, first+k, v, row[v], want[v], d, logitsTol)
								}
								worst = math.Max(worst, d)
							}
						}
					}
				}
				check("stepwise", step.Logits, step.FirstPosition)
				check("whole prompt", whole.Logits, whole.FirstPosition)
				if step.FirstPosition != 0 || whole.FirstPosition != P-1 {
					t.Fatalf("first positions %d and %d, want 0 and %d", step.FirstPosition, whole.FirstPosition, P-1)
				}
				t.Logf("%s: max |Δ logit| %.3g over %d sequences × %d positions", whole.Plan, worst, len(ref.PromptIDs), P)
			})
		}
	}
}
