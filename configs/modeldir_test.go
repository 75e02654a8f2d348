package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/arch"
)

// tomlModelDirRun is the config text ModelDirRun.Config was once written
// as and re-parsed from; it stays here as an independent way to the same
// config (Parse, the presets, model.dir's config.json).
func tomlModelDirRun(r ModelDirRun, name string, context, out, nodes, perNode int) string {
	tp, pp, mbs := max(r.TP, 1), max(r.PP, 1), max(r.Microbatches, 1)
	var extra strings.Builder
	if r.DType != "" {
		fmt.Fprintf(&extra, "dtype = %q\n", r.DType)
	}
	phases := `["prefill", "decode"]`
	if r.Encoder {
		extra.WriteString("encoder = true\n")
		phases = `["prefill"]`
	}
	lm := ""
	if r.LayerMap != nil {
		lm = "layer_map = " + strings.ReplaceAll(fmt.Sprint(r.LayerMap), " ", ", ")
	}
	return fmt.Sprintf(`version = 1
name = %q
[model]
dir = %q
%s[workload]
batch = %d
context = %d
output_tokens = %d
phases = %s
[parallel]
tp = %d
pp = %d
microbatches = %d
%s
[hardware]
preset = "h100-sxm"
[topology]
preset = "dgx-h100x2"
name = "dgx-h100x%d"
nodes = %d
gpus_per_node = %d
[run]
iterations = 1
`, name, r.Dir, extra.String(), max(r.Batch, 1), context, out, phases, tp, pp, mbs, lm, nodes, nodes, perNode)
}

func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "checkpoint", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestModelDirRunMatchesTOML: the config built from the description equals
// the one the TOML text gives, field by field and by hash.
func TestModelDirRunMatchesTOML(t *testing.T) {
	gpt2, llama := fixtureDir(t, "gpt2-tiny"), fixtureDir(t, "llama-tiny")
	for _, c := range []struct {
		run                          ModelDirRun
		name                         string
		context, out, nodes, perNode int
	}{
		// Defaults: context min(2048, n_positions 128) = 128, output min(128, 64) = 64.
		{ModelDirRun{Dir: gpt2}, "gpt2-tiny-tp1pp1", 128, 64, 1, 1},
		// llama-tiny: max_position_embeddings 256; 4 × 2 = 8 ranks fill one node.
		{ModelDirRun{Dir: llama, TP: 2, PP: 2, Microbatches: 2, Batch: 4, Context: 32, OutputTokens: 8, DType: "bf16"},
			"llama-tiny-tp2pp2-mb2", 32, 8, 1, 4},
		{ModelDirRun{Dir: gpt2, PP: 2, LayerMap: []int{0, 1}, Batch: 2, Context: 16, OutputTokens: 4, DType: "fp32", Encoder: true},
			"gpt2-tiny-layerwise2", 16, 4, 1, 2},
	} {
		got, err := c.run.Config()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := Parse(strings.NewReader(tomlModelDirRun(c.run, c.name, c.context, c.out, c.nodes, c.perNode)), "--model-dir "+c.run.Dir)
		if err != nil {
			t.Fatalf("%s: the TOML route: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, want) || got.Hash() != want.Hash() {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
		}
		if got.Model.Description() == nil || got.Model.Description().Source != filepath.Join(c.run.Dir, arch.ConfigFile) {
			t.Errorf("%s: the model does not keep its description: %+v", c.name, got.Model.Description())
		}
	}
}

func TestGenerateConfigMatchesTOML(t *testing.T) {
	dir := fixtureDir(t, "llama-tiny")
	got, err := GenerateConfig(dir, 2, 12, 4, 2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`version = 1
name = "generate"
[model]
dir = %q
dtype = "fp32"
[workload]
batch = 2
context = 12
output_tokens = 4
[parallel]
tp = 2
pp = 1
microbatches = 1
[hardware]
preset = "h100-sxm"
[topology]
name = "in-process"
nodes = 1
gpus_per_node = 2
[topology.intra_node]
class = "nvlink"
name = "in-process"
bytes_per_s = 450e9
latency_s = 1e-6
[run]
iterations = 1
`, dir)
	want, err := Parse(strings.NewReader(src), "--model-dir "+dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || got.Hash() != want.Hash() {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	if _, err := GenerateConfig(filepath.Join(t.TempDir(), "none"), 1, 4, 1, 1, 1, 1); err == nil || !strings.Contains(err.Error(), "model.dir") {
		t.Errorf("a missing directory: %v", err)
	}
}

// TestModelDirReadOnce: a run handed its description reads no file, and
// the partitionings of a run share the description its config read.
func TestModelDirReadOnce(t *testing.T) {
	dir := fixtureDir(t, "gpt2-tiny")
	base, err := ModelDirRun{Dir: dir, Batch: 2, Context: 16, OutputTokens: 4}.Config()
	if err != nil {
		t.Fatal(err)
	}
	d := base.Model.Description()
	gone := filepath.Join(t.TempDir(), "gone")
	if _, err := (ModelDirRun{Dir: gone, Batch: 2, Context: 16, OutputTokens: 4}).Config(); err == nil ||
		!strings.Contains(err.Error(), `--model-dir `+gone+`: model.dir = "`+gone+`"`) {
		t.Fatalf("a missing directory: %v", err)
	}
	cfg, err := ModelDirRun{Dir: gone, Batch: 2, Context: 16, OutputTokens: 4, Desc: d}.Config()
	if err != nil || cfg.Model.Description() != d || cfg.Model.Layers != 2 {
		t.Fatalf("with its description, a run reads nothing: %v, %+v", err, cfg)
	}
	// gpt2-tiny (4 heads, 2 layers) within 8 ranks: tp 1, 2, 4 × pp 1, 2, and layer-wise.
	ps := ModelDirRun{Dir: dir, Batch: 2}.Partitionings(base.Model, 8)
	if len(ps) != 7 {
		t.Fatalf("%d partitionings, want 7", len(ps))
	}
	for _, p := range ps {
		if p.Desc != d {
			t.Errorf("tp %d pp %d: description %p, want the base's %p", p.TP, p.PP, p.Desc, d)
		}
	}
}

// TestModelDirRelative: a relative directory with a folder part is read
// relative to the working directory, as the flag says.
func TestModelDirRelative(t *testing.T) {
	rel := filepath.Join("..", "checkpoint", "testdata", "gpt2-tiny")
	if _, err := os.Stat(rel); err != nil {
		t.Fatal(err)
	}
	cfg, err := ModelDirRun{Dir: rel, Batch: 2, Context: 16, OutputTokens: 4}.Config()
	if err != nil || cfg.Model.Dir != rel || cfg.Model.Arch != "gpt2" {
		t.Fatalf("%v, %+v", err, cfg)
	}
}
