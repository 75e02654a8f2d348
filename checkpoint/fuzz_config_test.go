package checkpoint

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/partbench/partbench/arch"
)

// FuzzConfigJSON feeds arbitrary bytes to the config.json parser. It must
// never panic, and what it accepts must be a shape the planner and the
// readers can use: a known family and norm, positive sizes, heads that
// share their key/value heads evenly, finite positive epsilons and a finite
// rope base. Seeds are the fixtures' config.json files and the published
// configs in testdata/configs.
// Run: go test ./checkpoint -run NONE -fuzz FuzzConfigJSON.
func FuzzConfigJSON(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*/config.json")
	more, _ := filepath.Glob("testdata/configs/*.json")
	paths = append(paths, more...)
	if len(paths) == 0 {
		f.Fatal("no testdata/*/config.json seeds")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"architectures": ["LlamaForCausalLM"], "num_attention_heads": 0}`))
	f.Add([]byte(`{"architectures": ["GPT2LMHeadModel"], "n_embd": 1e400}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "config.json")
		if err != nil {
			if c != nil {
				t.Fatalf("an error with a config: %v", err)
			}
			return
		}
		if c.Family != arch.Llama && c.Family != arch.GPT2 {
			t.Fatalf("family %q", c.Family)
		}
		if c.Norm != arch.RMSNorm && c.Norm != arch.LayerNorm {
			t.Fatalf("norm %v", c.Norm)
		}
		for name, v := range map[string]int{"layers": c.Layers, "hidden": c.Hidden, "heads": c.Heads, "kv heads": c.KVHeads,
			"head dim": c.HeadDim, "ffn": c.FFN, "vocab": c.Vocab} {
			if v <= 0 {
				t.Fatalf("%s = %d accepted", name, v)
			}
		}
		if c.Heads%c.KVHeads != 0 {
			t.Fatalf("%d heads over %d kv heads accepted", c.Heads, c.KVHeads)
		}
		if !(c.NormEps > 0) || math.IsInf(c.NormEps, 0) || math.IsNaN(c.RopeTheta) || math.IsInf(c.RopeTheta, 0) || c.RopeTheta < 0 {
			t.Fatalf("eps %v, rope theta %v accepted", c.NormEps, c.RopeTheta)
		}
	})
}
