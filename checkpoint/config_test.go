package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/partbench/partbench/arch"
)

func TestFixtureConfigs(t *testing.T) {
	for _, c := range []struct {
		dir  string
		want Config
	}{
		// Values from testdata/*/config.json and the fixtures' README.
		{"llama-tiny", Config{
			Architecture: "LlamaForCausalLM", Family: arch.Llama, Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16,
			FFN: 176, Vocab: 512, MaxPositions: 256, NormEps: 1e-5, Norm: arch.RMSNorm, RopeTheta: 10000,
			Activation: "silu", GatedMLP: true, TorchDType: "float32", DType: arch.FP32,
		}},
		// n_inner null → 4·64 = 256; GPT-2 ties its LM head and has biases.
		{"gpt2-tiny", Config{
			Architecture: "GPT2LMHeadModel", Family: arch.GPT2, Layers: 2, Hidden: 64, Heads: 4, KVHeads: 4, HeadDim: 16,
			FFN: 256, Vocab: 512, MaxPositions: 128, NormEps: 1e-5, Norm: arch.LayerNorm, LearnedPositions: true,
			TieWordEmbeddings: true, Activation: "gelu_new", Bias: true, TorchDType: "float32", DType: arch.FP32,
		}},
	} {
		got, err := ReadConfig(fixture(c.dir))
		if err != nil {
			t.Fatal(err)
		}
		c.want.Source = filepath.Join(fixture(c.dir), ConfigFile)
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.dir, *got, c.want)
		}
	}
}

// llamaJSON is the llama-tiny fixture's config.json with edits applied: a
// key set to a JSON value, or removed when the value is "".
func llamaJSON(t *testing.T, edits map[string]string) []byte {
	t.Helper()
	data, err := os.ReadFile(fixture("llama-tiny/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	return editJSON(t, data, edits)
}

func editJSON(t *testing.T, data []byte, edits map[string]string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range edits {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = json.RawMessage(v)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRopeTheta(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits map[string]string
		want  float64
	}{
		{"transformers 5: nested", nil, 10000},
		{"transformers 4: top level", map[string]string{"rope_parameters": "", "rope_theta": "500000.0"}, 500000},
		{"both, agreeing", map[string]string{"rope_theta": "10000"}, 10000},
		{"neither: LlamaConfig default", map[string]string{"rope_parameters": ""}, 10000},
		{"nested only type", map[string]string{"rope_parameters": `{"rope_type":"default"}`, "rope_theta": "1e6"}, 1e6},
	} {
		cfg, err := ParseConfig(llamaJSON(t, c.edits), "config.json")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if cfg.RopeTheta != c.want {
			t.Errorf("%s: rope theta %v, want %v", c.name, cfg.RopeTheta, c.want)
		}
	}
}

// TestConfigRefusals: every unsupported option is refused naming the field,
// the value and what is allowed.
func TestConfigRefusals(t *testing.T) {
	gpt2, err := os.ReadFile(fixture("gpt2-tiny/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want []string
	}{
		{"unknown architecture", llamaJSON(t, map[string]string{"architectures": `["GPTJForCausalLM"]`}),
			[]string{"architectures", "GPTJForCausalLM", "allowed: GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM"}},
		{"two architectures", llamaJSON(t, map[string]string{"architectures": `["LlamaForCausalLM","GPT2LMHeadModel"]`}), []string{"exactly one"}},
		{"no architectures", llamaJSON(t, map[string]string{"architectures": ""}), []string{"architectures is missing"}},
		{"model_type mismatch", llamaJSON(t, map[string]string{"model_type": `"gpt2"`}), []string{"model_type", `"gpt2"`, `"llama"`}},
		{"rope scaling", llamaJSON(t, map[string]string{"rope_scaling": `{"type":"linear","factor":2.0}`}),
			[]string{"rope_scaling.type", `"linear"`, `allowed: "default"`}},
		{"rope parameters llama3", llamaJSON(t, map[string]string{"rope_parameters": `{"rope_type":"llama3","rope_theta":500000}`}),
			[]string{"rope_parameters.rope_type", `"llama3"`}},
		{"rope theta disagree", llamaJSON(t, map[string]string{"rope_theta": "500000"}), []string{"rope_theta = 500000", "disagree"}},
		{"sliding window", llamaJSON(t, map[string]string{"sliding_window": "4096"}), []string{"sliding_window = 4096", "allowed: null"}},
		{"attention bias", llamaJSON(t, map[string]string{"attention_bias": "true"}), []string{"attention_bias = true", "allowed: false"}},
		{"mlp bias", llamaJSON(t, map[string]string{"mlp_bias": "true"}), []string{"mlp_bias = true", "allowed: false"}},
		{"activation", llamaJSON(t, map[string]string{"hidden_act": `"gelu"`}), []string{"hidden_act", `"gelu"`, `"silu"`}},
		{"missing size", llamaJSON(t, map[string]string{"hidden_size": ""}), []string{"hidden_size is missing"}},
		{"zero layers", llamaJSON(t, map[string]string{"num_hidden_layers": "0"}), []string{"num_hidden_layers = 0", "positive"}},
		{"string size", llamaJSON(t, map[string]string{"vocab_size": `"512"`}), []string{"vocab_size", "integer"}},
		{"kv heads", llamaJSON(t, map[string]string{"num_key_value_heads": "3"}), []string{"num_key_value_heads = 3", "divide"}},
		{"quantized", llamaJSON(t, map[string]string{"quantization_config": `{"quant_method":"gptq"}`}), []string{"quantization_config"}},
		{"mistral window", llamaJSON(t, map[string]string{"architectures": `["MistralForCausalLM"]`, "model_type": `"mistral"`, "sliding_window": "4096"}),
			[]string{"sliding_window = 4096"}},
		{"gpt2 untied", editJSON(t, gpt2, map[string]string{"tie_word_embeddings": "false"}), []string{"tie_word_embeddings = false", "allowed: true"}},
		{"gpt2 relu", editJSON(t, gpt2, map[string]string{"activation_function": `"relu"`}), []string{"activation_function", `"relu"`, "gelu_new"}},
		{"gpt2 layer scaling", editJSON(t, gpt2, map[string]string{"scale_attn_by_inverse_layer_idx": "true"}), []string{"scale_attn_by_inverse_layer_idx = true"}},
		{"gpt2 heads", editJSON(t, gpt2, map[string]string{"n_head": "5"}), []string{"n_embd = 64", "n_head = 5"}},
		{"gpt2 eps 0", editJSON(t, gpt2, map[string]string{"layer_norm_epsilon": "0e000"}), []string{"layer_norm_epsilon = 0", "positive finite"}},
		{"llama eps negative", llamaJSON(t, map[string]string{"rms_norm_eps": "-1e-6"}), []string{"rms_norm_eps = -1e-06", "positive finite"}},
		{"not json", []byte("{"), []string{"not a JSON object"}},
	} {
		_, err := ParseConfig(c.data, "x/config.json")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range append(c.want, "x/config.json") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
	// A Mistral-style config without a sliding window is the Llama family.
	cfg, err := ParseConfig(llamaJSON(t, map[string]string{"architectures": `["MistralForCausalLM"]`, "model_type": `"mistral"`, "sliding_window": "null"}), "m")
	if err != nil || cfg.Family != arch.Llama {
		t.Errorf("Mistral without sliding window: %+v, %v", cfg, err)
	}
}

// A model directory whose config.json is a device, a pipe or too large is
// refused before any read, naming config.json and the path.
func TestReadConfigBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"device", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (a character device)"},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (a named pipe)"},
		// 1 MiB + 1 = 1048577 bytes.
		{"big", func(p string) error {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
			return os.Truncate(p, MaxConfigJSONBytes+1)
		}, "1048577 bytes, more than the 1048576 bytes (1 MiB) a config.json may have"},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, ConfigFile)
		if err := c.make(p); err != nil {
			t.Skipf("%s: %v", c.name, err)
		}
		_, err := ReadConfig(dir)
		if want := "read config.json " + p + ": " + c.want; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, want)
		}
	}
}
