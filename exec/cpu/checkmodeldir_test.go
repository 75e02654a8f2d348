package cpu_test

import (
	"context"
	"slices"
	"testing"

	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
)

// TestCheckModelDir: every partitioning of at most 4 ranks the fixtures'
// shapes allow equals the single rank with the checkpoint's weights.
// llama-tiny: 4 heads, 2 KV heads, ffn 176, 2 layers → tp ∈ {1, 2} (tp 4
// does not divide 2 KV heads), pp ∈ {1, 2}: tp1pp2, tp2pp1, tp2pp2 and
// layer-wise. gpt2-tiny: 4 heads, ffn 256, 2 layers → tp ∈ {1, 2, 4}:
// tp1pp2, tp2pp1, tp2pp2, tp4pp1 and layer-wise.
func TestCheckModelDir(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []string
	}{
		{"llama-tiny", []string{"llama-tiny-tp1pp2-mb2", "llama-tiny-tp2pp1", "llama-tiny-tp2pp2-mb2", "llama-tiny-layerwise2-mb2"}},
		{"gpt2-tiny", []string{"gpt2-tiny-tp1pp2-mb2", "gpt2-tiny-tp2pp1", "gpt2-tiny-tp2pp2-mb2", "gpt2-tiny-tp4pp1", "gpt2-tiny-layerwise2-mb2"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			run := configs.ModelDirRun{Dir: checkpointtest.Dir(t, tc.fixture), Batch: 2, Context: 16, OutputTokens: 4, DType: "fp32"}
			res, err := cpu.CheckModelDir(context.Background(), run, 4, pexec.CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range res {
				names = append(names, r.Config)
				if !r.Pass {
					t.Errorf("%s: %v", r.Config, r.Err())
				}
				if r.ArgmaxCompared == 0 {
					t.Errorf("%s: no argmax compared", r.Config)
				}
			}
			slices.Sort(names)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Fatalf("checked %v, want %v", names, want)
			}
		})
	}
}
