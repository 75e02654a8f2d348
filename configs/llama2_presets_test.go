package configs_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestLlama2Presets: each Llama 2 preset has the shape of its Hugging Face
// config.json (transcribed in checkpoint/testdata/configs) and partition
// counts exactly the public parameter count. No rounding is needed: with the
// embedding and the untied LM head included, the count is exact integer
// arithmetic on the config, e.g. for 7B
// 32·(4·4096² + 3·4096·11008 + 2·4096) + 2·32000·4096 + 4096 = 6,738,415,616.
func TestLlama2Presets(t *testing.T) {
	const strategy = `
version = 1
[model]
preset = "PRESET"
[workload]
batch = 8
context = 4096
output_tokens = 128
[parallel]
tp = 8
pp = 2
microbatches = 4
[hardware]
preset = "h100-sxm"
[topology]
preset = "dgx-h100x2"
[run]
iterations = 1
`
	for _, c := range []struct {
		preset string
		params int64 // as transformers' num_parameters() reports for the checkpoint
	}{
		{"llama-2-7b", 6_738_415_616},
		{"llama-2-13b", 13_015_864_320},
		{"llama-2-70b", 68_976_648_192},
	} {
		cfg, err := configs.Parse(strings.NewReader(strings.Replace(strategy, "PRESET", c.preset, 1)), c.preset)
		if err != nil {
			t.Fatalf("%s: %v", c.preset, err)
		}
		m := cfg.Model
		if got := partition.ParamsTotal(m); got != c.params {
			t.Errorf("%s: partition counts %d parameters, the public figure is %d", c.preset, got, c.params)
		}
		hf, err := checkpoint.ReadConfig(filepath.Join("..", "checkpoint", "testdata", "configs", c.preset+".json"))
		if err != nil {
			t.Fatal(err)
		}
		got := [7]int{m.Layers, m.Hidden, m.Heads, m.KVHeads, m.HeadDim, m.FFN, m.Vocab}
		want := [7]int{hf.Layers, hf.Hidden, hf.Heads, hf.KVHeads, hf.HeadDim, hf.FFN, hf.Vocab}
		if got != want || !m.GatedMLP || !m.Embeddings || !m.LMHead || hf.TieWordEmbeddings {
			t.Errorf("%s: preset shape %v (gated %v, embeddings %v, lm_head %v), config.json %v", c.preset, got, m.GatedMLP, m.Embeddings, m.LMHead, want)
		}
		if hf.ParamCount() != c.params {
			t.Errorf("%s: config.json counts %d", c.preset, hf.ParamCount())
		}
	}
}
