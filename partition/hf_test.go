package partition_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func parseModel(t *testing.T, model string, tp int) *configs.Config {
	t.Helper()
	src := fmt.Sprintf(`version = 1
[model]
%s
[workload]
batch = 4
context = 64
output_tokens = 8
[parallel]
tp = %d
pp = 1
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
`, model, tp, tp)
	cfg, err := configs.Parse(strings.NewReader(src), filepath.Join(t.TempDir(), "m.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestParamsOfCheckpoints: the dry run's parameter count of a model
// directory's config.json equals the elements of every tensor in its
// safetensors (checkpoint.Verify counts them, independently of partition).
func TestParamsOfCheckpoints(t *testing.T) {
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		dir := checkpointtest.Dir(t, fx)
		_, n, err := checkpoint.Verify(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := parseModel(t, fmt.Sprintf("dir = %q", dir), 2)
		if got := partition.ParamsTotal(cfg.Model); got != n {
			t.Errorf("%s: partition counts %d parameters, the checkpoint holds %d", fx, got, n)
		}
	}
}

// TestParamsOfPublicConfigs: for the seeds' models' config.json, partition's
// count equals checkpoint's closed form and its tensor list (two other
// derivations), and the presets equal the config.json's shape.
func TestParamsOfPublicConfigs(t *testing.T) {
	for _, c := range []struct {
		name   string
		params int64 // transformers' num_parameters() (checkpoint/layout_test.go derives each)
	}{
		{"llama-2-7b", 6_738_415_616},
		{"llama-2-13b", 13_015_864_320},
		{"llama-2-70b", 68_976_648_192},
		{"gpt2-xl", 1_557_611_200},
		{"tiny-gpt2", 102_714},
	} {
		hf, err := arch.ReadConfig(filepath.Join("..", "checkpoint", "testdata", "configs", c.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, s := range hf.Tensors() {
			sum += s.Elements()
		}
		m := configs.ModelFromDescription(hf, "fp16")
		if got := partition.ParamsTotal(m); got != c.params || got != hf.ParamCount() || got != sum {
			t.Errorf("%s: partition counts %d, checkpoint's closed form %d, its tensors %d, public %d", c.name, got, hf.ParamCount(), sum, c.params)
		}
		preset := parseModel(t, fmt.Sprintf("preset = %q", c.name), 1).Model
		if got := partition.ParamsTotal(preset); got != c.params {
			t.Errorf("preset %s: %d parameters, want %d", c.name, got, c.params)
		}
		if preset.Layers != m.Layers || preset.Hidden != m.Hidden || preset.Heads != m.Heads || preset.KVHeads != m.KVHeads ||
			preset.HeadDim != m.HeadDim || preset.FFN != m.FFN || preset.Vocab != m.Vocab || preset.Family() != m.Family() ||
			preset.MaxPositions != m.MaxPositions || preset.Tied() != m.Tied() {
			t.Errorf("preset %s: %+v, config.json says %+v", c.name, preset, m)
		}
	}
}
