package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/arch"
)

func TestArchValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"llama default", func(c *Config) {}, ""},
		{"gpt2", func(c *Config) {
			c.Model.Arch, c.Model.GatedMLP, c.Model.KVHeads, c.Model.MaxPositions = "gpt2", false, 8, 24
		}, ""},
		{"unknown arch", func(c *Config) { c.Model.Arch = "bert" }, `model.arch: must be one of "gpt2", "llama" (got "bert")`},
		{"gpt2 rope", func(c *Config) {
			c.Model.Arch, c.Model.GatedMLP, c.Model.KVHeads, c.Model.MaxPositions, c.Model.RopeTheta = "gpt2", false, 8, 24, 1e4
		}, "model.rope_theta: gpt2 has learned positions"},
		{"gpt2 gated", func(c *Config) { c.Model.Arch, c.Model.KVHeads, c.Model.MaxPositions = "gpt2", 8, 24 }, "model.gated_mlp"},
		{"gpt2 gqa", func(c *Config) { c.Model.Arch, c.Model.GatedMLP, c.Model.MaxPositions = "gpt2", false, 24 }, "model.kv_heads: gpt2 has multi-head attention, kv_heads = heads = 8 (got 4)"},
		{"gpt2 positions", func(c *Config) { c.Model.Arch, c.Model.GatedMLP, c.Model.KVHeads = "gpt2", false, 8 }, "model.max_positions: gpt2 needs"},
		{"context beyond positions", func(c *Config) { c.Model.MaxPositions = 16 }, "workload.context: must be ≤ model.max_positions = 16 (got 24)"},
		{"encoder decodes", func(c *Config) { c.Model.Encoder = true }, "workload.phases: an encoder"},
		{"encoder", func(c *Config) { c.Model.Encoder, c.Workload.Phases = true, []string{"prefill"} }, ""},
		{"eps", func(c *Config) { c.Model.NormEps = -1 }, "model.norm_eps"},
		{"tied without embedding", func(c *Config) { c.Model.TiedEmbeddings, c.Model.Embeddings = true, false }, "model.tied_embeddings"},
	} {
		cfg, err := Load("test/tp2pp2-tiny")
		if err != nil {
			t.Fatal(err)
		}
		c.edit(cfg)
		err = cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestModelDir(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "checkpoint", "testdata", "gpt2-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile(filepath.Join("test", "single-tiny.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// Replace the [model] table of single-tiny with one naming the directory.
	s := string(base)
	start, end := strings.Index(s, "[model]"), strings.Index(s, "[workload]")
	file := s[:start] + "[model]\ndir = \"" + dir + "\"\n\n" + s[end:]
	cfg, err := Parse(strings.NewReader(file), "dir.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Model
	// gpt2-tiny: 2 layers, n_embd 64, 4 heads of 16, n_inner null (4·64), vocab 512, 128 positions, float32.
	if m.Arch != "gpt2" || m.Layers != 2 || m.Hidden != 64 || m.Heads != 4 || m.KVHeads != 4 || m.HeadDim != 16 ||
		m.FFN != 256 || m.Vocab != 512 || m.MaxPositions != 128 || !m.Tied() || m.DType != "fp32" || !m.Embeddings || !m.LMHead {
		t.Fatalf("model from config.json: %+v", m)
	}
	// A shape key beside dir is refused, naming it.
	dup := s[:start] + "[model]\ndir = \"" + dir + "\"\nlayers = 3\n\n" + s[end:]
	if _, err := Parse(strings.NewReader(dup), "dup.toml"); err == nil || !strings.Contains(err.Error(), "remove model.layers") {
		t.Fatalf("layers beside dir: %v", err)
	}
	missing := s[:start] + "[model]\ndir = \"" + filepath.Join(t.TempDir(), "none") + "\"\n\n" + s[end:]
	if _, err := Parse(strings.NewReader(missing), "missing.toml"); err == nil || !strings.Contains(err.Error(), "missing.toml: model.dir") {
		t.Fatalf("missing dir: %v", err)
	}
}

// TestElemType: model.dtype read as a typed element type; a name Validate
// refuses is named with what is allowed.
func TestElemType(t *testing.T) {
	cfg, err := Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]arch.DType{"fp32": arch.FP32, "fp16": arch.FP16, "bf16": arch.BF16, "fp8": arch.FP8, "int3": 0, "": 0} {
		cfg.Model.DType = name
		if got := cfg.Model.ElemType(); got != want {
			t.Errorf("ElemType(%q) = %v, want %v", name, got, want)
		}
		err := cfg.Validate()
		wantErr := `model.dtype: must be one of fp32, fp16, bf16, fp8 (got "` + name + `")`
		if refused := err != nil && strings.Contains(err.Error(), wantErr); refused != (want == 0) {
			t.Errorf("dtype %q: Validate() = %v", name, err)
		}
	}
}

// TestFeaturesFollowFamily: configs.Model.Features takes the fixed features
// from the family and the choices from the config.
func TestFeaturesFollowFamily(t *testing.T) {
	llama := Model{GatedMLP: true, ModelArch: ModelArch{RopeTheta: 5e5}}
	gpt2 := Model{ModelArch: ModelArch{Arch: "gpt2", MaxPositions: 128}}
	if a := llama.Features(); a.Norm != arch.RMSNorm || a.MLP != arch.GatedSiLU || a.RopeTheta != 5e5 || a.Bias || a.Tied || llama.Tied() {
		t.Errorf("llama: %+v", a)
	}
	if a := gpt2.Features(); a.Norm != arch.LayerNorm || a.Positions != arch.Learned || a.MLP != arch.GELUTanh || a.RopeTheta != 0 ||
		!a.Bias || !a.Tied || !gpt2.Tied() || a.MaxPositions != 128 {
		t.Errorf("gpt2: %+v", a)
	}
	if llama.Family() != arch.Llama || gpt2.Family() != arch.GPT2 {
		t.Errorf("families %v, %v", llama.Family(), gpt2.Family())
	}
}

// TestArchConstantsRegistered: the family names callers spell out are
// registered families.
func TestArchConstantsRegistered(t *testing.T) {
	for name, want := range map[string]*arch.Family{ArchLlama: arch.Llama, ArchGPT2: arch.GPT2} {
		if f, err := arch.Lookup(name); err != nil || f != want {
			t.Errorf("%q: %v, %v", name, f, err)
		}
	}
}
