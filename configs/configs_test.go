package configs

import (
	"strings"
	"testing"
)

func TestEveryEmbeddedStrategyLoads(t *testing.T) {
	names := Presets("")
	for _, n := range Presets("test") {
		names = append(names, "test/"+n)
	}
	if len(names) < 4 {
		t.Fatalf("only %d embedded strategies: %v", len(names), names)
	}
	for _, n := range names {
		if _, err := Load(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestSeedPresets(t *testing.T) {
	tp, err := Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	lw, err := Load("configs/layerwise16.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The seed's model, word for word (seed 004, "Model Specifications").
	for _, c := range []*Config{tp, lw} {
		m := c.Model
		if m.Layers != 16 || m.Hidden != 4096 || m.Heads != 32 || m.KVHeads != 32 || m.HeadDim != 128 ||
			m.FFN != 16384 || !m.GatedMLP || m.Vocab != 50257 || m.DType != "fp16" {
			t.Errorf("%s: model %+v is not the seed's", c.Name, m)
		}
		if c.Workload.Batch != 128 || c.Workload.Context != 10000 || c.Run.Warmup != 100 || c.Run.Iterations != 1000 {
			t.Errorf("%s: workload %+v run %+v are not the seed's", c.Name, c.Workload, c.Run)
		}
		if c.Hardware.Name != "H100-SXM5-80GB" || c.Topology.Size() != 16 || c.Topology.Nodes != 2 {
			t.Errorf("%s: hardware %q on %d GPUs in %d nodes", c.Name, c.Hardware.Name, c.Topology.Size(), c.Topology.Nodes)
		}
	}
	if tp.Parallel.TP != 8 || tp.Parallel.PP != 2 || tp.Parallel.Microbatches != 8 {
		t.Errorf("tp8pp2 parallel %+v", tp.Parallel)
	}
	if lw.Parallel.TP != 1 || lw.Parallel.PP != 16 || lw.Parallel.Microbatches != 1 {
		t.Errorf("layerwise16 parallel %+v", lw.Parallel)
	}
	if tp.Hash() == lw.Hash() {
		t.Error("different configs hash the same")
	}
	again, _ := Load("tp8pp2")
	if again.Hash() != tp.Hash() {
		t.Error("the same config hashes differently")
	}
}

const base = `
version = 1
[model]
preset = "seed-dense16"
[workload]
batch = 128
context = 10000
output_tokens = 128
[parallel]
tp = 8
pp = 2
microbatches = 8
[hardware]
preset = "h100-sxm"
[topology]
preset = "dgx-h100x2"
[run]
iterations = 10
`

func TestInlineOverridesPreset(t *testing.T) {
	c, err := Parse(strings.NewReader(strings.Replace(base, `preset = "h100-sxm"`, "preset = \"h100-sxm\"\nl2_usable_fraction = 0.5", 1)), "inline")
	if err != nil {
		t.Fatal(err)
	}
	if c.Hardware.L2UsableFraction != 0.5 || c.Hardware.HBMBytesPerS != 3.35e12 {
		t.Fatalf("override not applied on top of preset: %+v", c.Hardware.GPU)
	}
}

func TestErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown key", "[run]", "[run]\nitertions = 3", "unknown key run.itertions"},
		{"unknown nested key", "[parallel]", "[parallel]\nfoo = 1", "parallel.foo"},
		{"tp does not divide heads", "tp = 8", "tp = 3", "parallel.tp: must divide model.heads = 32 (got 3)"},
		{"gpus mismatch", "pp = 2", "pp = 4", "tp × pp = 8 × 4 = 32 GPUs, but topology \"dgx-h100x2\" has 16"},
		{"microbatches", "microbatches = 8", "microbatches = 7", "parallel.microbatches: must divide workload.batch = 128 (got 7)"},
		{"dtype", `preset = "seed-dense16"`, "preset = \"seed-dense16\"\ndtype = \"int3\"", "model.dtype: must be one of"},
		{"unknown preset", `preset = "h100-sxm"`, `preset = "h900"`, "hardware.preset: unknown preset \"h900\""},
		{"output tokens", "output_tokens = 128", "output_tokens = 10000", "workload.output_tokens: must be in [1, 9999] (got 10000)"},
		{"layer map length", "microbatches = 8", "microbatches = 8\nlayer_map = [0, 1]", "parallel.layer_map: must list a stage for each of the 16 layers"},
		{"layer map order", "microbatches = 8", "microbatches = 8\nlayer_map = [0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,0]", "parallel.layer_map[15]"},
		{"bad toml", "[run]", "[run\n", "inline"},
		{"negative link", "[run]", "[topology.inter_node]\nbytes_per_s = -1\n[run]", "topology.inter_node.bytes_per_s: must be a positive finite number"},
		{"fp8 on a100", `preset = "h100-sxm"`, `preset = "a100-sxm-80g"`, "model.dtype: fp8 is not supported"},
	} {
		in := strings.Replace(base, tc.from, tc.to, 1)
		if tc.name == "fp8 on a100" {
			in = strings.Replace(in, `preset = "seed-dense16"`, "preset = \"seed-dense16\"\ndtype = \"fp8\"", 1)
		}
		_, err := Parse(strings.NewReader(in), "inline")
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadUnknownNameListsPresets(t *testing.T) {
	_, err := Load("tp9pp9")
	if err == nil || !strings.Contains(err.Error(), "tp8pp2") || !strings.Contains(err.Error(), "layerwise16") {
		t.Fatalf("error should list presets: %v", err)
	}
}
