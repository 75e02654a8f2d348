package arch

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	if f, err := Lookup(""); err != nil || f != Llama {
		t.Fatalf("Lookup(\"\") = %v, %v; want the default family llama", f, err)
	}
	for _, f := range Families() {
		if got, err := Lookup(f.Name); err != nil || got != f {
			t.Errorf("Lookup(%q) = %v, %v", f.Name, got, err)
		}
		if len(f.HF) == 0 || f.parse == nil || f.Names.Layer == "" || f.Norm == 0 || f.Positions == 0 || f.Layout == 0 {
			t.Errorf("family %q is incomplete: %+v", f.Name, f)
		}
		for _, h := range f.HF {
			if got, ok := ByArchitecture(h.Architecture); !ok || got != f {
				t.Errorf("ByArchitecture(%q) = %v, %v; want %q", h.Architecture, got, ok, f.Name)
			}
		}
	}
	// The two families this build registers, sorted by name.
	if got := Names(); got != `"gpt2", "llama"` {
		t.Errorf("Names() = %s", got)
	}
	_, err := Lookup("bert")
	if err == nil || err.Error() != `model.arch: must be one of "gpt2", "llama" (got "bert")` {
		t.Errorf("Lookup(bert): %v", err)
	}
	if MustLookup("bert") != Llama {
		t.Errorf("MustLookup of an unknown name is not the default family")
	}
	if _, ok := ByArchitecture("GPTJForCausalLM"); ok {
		t.Errorf("GPTJForCausalLM is not registered")
	}
}

func TestDType(t *testing.T) {
	// Bytes: IEEE binary32 4, binary16 2, bfloat16 2, 8-bit floats 1.
	for _, c := range []struct {
		name  string
		d     DType
		bytes int
	}{{"fp32", FP32, 4}, {"fp16", FP16, 2}, {"bf16", BF16, 2}, {"fp8", FP8, 1}} {
		d, err := ParseDType(c.name)
		if err != nil || d != c.d || d.Bytes() != c.bytes || d.String() != c.name {
			t.Errorf("ParseDType(%q) = %v (%d B), %v; want %v (%d B)", c.name, d, d.Bytes(), err, c.d, c.bytes)
		}
		b, err := json.Marshal(struct{ D DType }{d})
		if err != nil || string(b) != `{"D":"`+c.name+`"}` {
			t.Errorf("marshal %v: %s, %v", d, b, err)
		}
		var back struct{ D DType }
		if err := json.Unmarshal(b, &back); err != nil || back.D != d {
			t.Errorf("unmarshal %s: %v, %v", b, back.D, err)
		}
	}
	for _, bad := range []string{"", "fp64", "FP16", "float16"} {
		_, err := ParseDType(bad)
		if err == nil || !strings.Contains(err.Error(), "allowed: fp32, fp16, bf16, fp8") || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParseDType(%q): %v", bad, err)
		}
	}
	var zero DType
	if zero.Valid() || zero.Bytes() != 0 {
		t.Errorf("the zero DType is valid or has %d bytes", zero.Bytes())
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Errorf("the zero DType marshals")
	}
	if TorchDType("bfloat16") != BF16 || TorchDType("float32") != FP32 || TorchDType("float16") != FP16 || TorchDType("float64") != 0 {
		t.Errorf("TorchDType")
	}
}

func TestFeatures(t *testing.T) {
	for _, c := range []struct {
		name string
		f    *Family
		o    Options
		want Features
	}{
		// Llama leaves the MLP to gated_mlp; θ and ε default to 10000 and 1e-5.
		{"llama gated", Llama, Options{GatedMLP: true},
			Features{Norm: RMSNorm, Positions: Rotary, MLP: GatedSiLU, NormEps: 1e-5, RopeTheta: 10000}},
		{"llama gelu tied encoder", Llama, Options{NormEps: 1e-6, RopeTheta: 5e5, TiedEmbeddings: true, Bidirectional: true},
			Features{Norm: RMSNorm, Positions: Rotary, MLP: GELUTanh, NormEps: 1e-6, RopeTheta: 5e5, Tied: true, Bidirectional: true}},
		// GPT-2 fixes its MLP, biases and tied head; a rotary θ is dropped.
		{"gpt2", GPT2, Options{GatedMLP: true, RopeTheta: 1e4, MaxPositions: 1024},
			Features{Norm: LayerNorm, Positions: Learned, MLP: GELUTanh, NormEps: 1e-5, Bias: true, Tied: true, MaxPositions: 1024}},
	} {
		if got := c.f.Features(c.o); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	// Norm parameters: RMSNorm a weight, LayerNorm a weight and a bias.
	if RMSNorm.Params(64) != 64 || LayerNorm.Params(64) != 128 {
		t.Errorf("norm params %d, %d", RMSNorm.Params(64), LayerNorm.Params(64))
	}
}

// TestDescriptions reads the fixtures' and published config.json files: the
// family's tensor list and the closed-form count agree with the published
// parameter counts (transformers' num_parameters(), see
// checkpoint/layout_test.go), and each description's features follow its
// family.
func TestDescriptions(t *testing.T) {
	dir := filepath.Join("..", "checkpoint", "testdata")
	for _, c := range []struct {
		file   string
		family *Family
		params int64
		dtype  DType
	}{
		{"configs/llama-2-7b.json", Llama, 6_738_415_616, FP16},
		{"configs/gpt2-xl.json", GPT2, 1_557_611_200, 0}, // no torch_dtype: no DType
		{"configs/tiny-gpt2.json", GPT2, 102_714, 0},
		{"llama-tiny/config.json", Llama, 0, FP32},
		{"gpt2-tiny/config.json", GPT2, 0, FP32},
	} {
		d, err := ReadConfig(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, s := range d.Tensors() {
			sum += s.Elements()
		}
		if d.Family != c.family || sum != d.ParamCount() || (c.params != 0 && sum != c.params) || d.DType != c.dtype {
			t.Errorf("%s: family %v, tensors %d, closed form %d, want %d; dtype %v, want %v", c.file, d.Family, sum, d.ParamCount(), c.params, d.DType, c.dtype)
		}
		a := d.Features(false)
		if a.Norm != c.family.Norm || a.Positions != c.family.Positions || a.Bias != c.family.Bias || a.NormEps != d.NormEps {
			t.Errorf("%s: features %+v do not follow family %s", c.file, a, c.family)
		}
		if (a.Positions == Learned) != (a.MaxPositions > 0) || (a.Positions == Rotary) != (a.RopeTheta > 0) {
			t.Errorf("%s: positions %v with max_positions %d, θ %g", c.file, a.Positions, a.MaxPositions, a.RopeTheta)
		}
	}
}

// TestNewFamilyIsOneEntry registers a family made of existing features
// under other names (a stand-in for a new Llama-style architecture): its
// config.json is read, its tensors are named by it, and model.arch may name
// it (Lookup, which configs validates with), with nothing else added.
func TestNewFamilyIsOneEntry(t *testing.T) {
	renamed := *Llama
	renamed.Name, renamed.Default = "renamed", false
	renamed.HF = []HFName{{"RenamedForCausalLM", "renamed"}}
	renamed.Names.Layer, renamed.Names.Q = "blocks.%d.", "attn.wq"
	register(&renamed)
	t.Cleanup(func() { unregister(&renamed) })

	d, err := ReadConfig(filepath.Join("..", "checkpoint", "testdata", "llama-tiny", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(map[string]any{
		"architectures": []string{"RenamedForCausalLM"}, "model_type": "renamed",
		"num_hidden_layers": d.Layers, "hidden_size": d.Hidden, "num_attention_heads": d.Heads,
		"num_key_value_heads": d.KVHeads, "intermediate_size": d.FFN, "vocab_size": d.Vocab,
		"max_position_embeddings": d.MaxPositions,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseConfig(data, "renamed/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := Lookup("renamed"); err != nil || f != &renamed || r.Family != &renamed {
		t.Fatalf("Lookup: %v, %v; parsed family %v", f, err, r.Family)
	}
	// llama-tiny: embedding, then layer 0's input norm and q projection [q = 4·16, hidden 64].
	ts := r.Tensors()
	if ts[2].Name != "blocks.0.attn.wq" || ts[2].Shape[0] != 64 || ts[2].Shape[1] != 64 || r.ParamCount() != d.ParamCount() {
		t.Errorf("tensor 2 %+v, %d parameters (llama-tiny: %d)", ts[2], r.ParamCount(), d.ParamCount())
	}
}

// unregister removes f from the registry (tests only).
func unregister(f *Family) {
	delete(byName, f.Name)
	for _, h := range f.HF {
		delete(byHF, h.Architecture)
	}
	for i, g := range families {
		if g == f {
			families = append(families[:i], families[i+1:]...)
			break
		}
	}
}
