package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/partbench/partbench/fileio"
)

// Family is an architecture family partbench knows.
type Family string

const (
	// Llama: RMSNorm, rotary positions, SwiGLU MLP, optional GQA, no biases.
	Llama Family = "llama"
	// GPT2: LayerNorm with bias, learned absolute positions, tanh-GELU MLP,
	// biases on every linear, Conv1D weights stored [in, out], tied LM head.
	GPT2 Family = "gpt2"
)

// Norm kinds.
const (
	RMSNorm   = "rmsnorm"
	LayerNorm = "layernorm" // with bias
)

// Config is a Hugging Face config.json in partbench's own terms: the
// architecture's shape and the options that change its function.
type Config struct {
	Source       string // the file it was read from
	Architecture string // e.g. "LlamaForCausalLM"
	Family       Family
	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	FFN          int
	Vocab        int
	MaxPositions int
	NormEps      float64
	Norm         string  // RMSNorm or LayerNorm
	RopeTheta    float64 // 0 when positions are learned (GPT-2)
	// LearnedPositions: a [max_positions, hidden] position embedding (GPT-2).
	LearnedPositions  bool
	TieWordEmbeddings bool
	Activation        string // as config.json spells it: "silu", "gelu_new"
	GatedMLP          bool   // gate and up projections (Llama) or one up (GPT-2)
	Bias              bool   // every linear has a bias (GPT-2)
	TorchDType        string // "dtype"/"torch_dtype", informational; "" when absent
}

// architectures maps the supported `architectures` entries to their family
// and the model_type transformers writes beside them.
var architectures = map[string]struct {
	family    Family
	modelType string
}{
	"LlamaForCausalLM":   {Llama, "llama"},
	"MistralForCausalLM": {Llama, "mistral"}, // without a sliding window it is Llama
	"GPT2LMHeadModel":    {GPT2, "gpt2"},
}

// MaxConfigJSONBytes bounds a model directory's config.json: Hugging Face
// configs are a few KiB (Llama-3-70B's is under 1 KiB).
const MaxConfigJSONBytes = 1 << 20

// ReadConfig reads config.json from a model directory (or the file itself).
func ReadConfig(path string) (*Config, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, ConfigFile)
	}
	data, err := fileio.ReadSmall(path, ConfigFile, MaxConfigJSONBytes)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data, path)
}

// fields is a config.json object with typed, presence-aware accessors; the
// first error sticks and names the field.
type fields struct {
	src string
	m   map[string]json.RawMessage
	err error
}

func (f *fields) fail(format string, a ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: %s", f.src, fmt.Sprintf(format, a...))
	}
}

// has reports whether key is present and not null.
func (f *fields) has(key string) bool {
	v, ok := f.m[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func (f *fields) decode(key string, into any, want string) bool {
	if !f.has(key) {
		return false
	}
	if err := json.Unmarshal(f.m[key], into); err != nil {
		f.fail("%s = %s: must be %s", key, f.m[key], want)
		return false
	}
	return true
}

// posInt reads a required positive integer; def > 0 is used when absent.
func (f *fields) posInt(key string, def int) int {
	var v int
	if !f.decode(key, &v, "an integer") {
		if f.err == nil && def <= 0 {
			f.fail("%s is missing (a positive integer is required)", key)
		}
		return def
	}
	if v <= 0 {
		f.fail("%s = %d: must be a positive integer", key, v)
	}
	return v
}

func (f *fields) float(key string, def float64) float64 {
	v := def
	f.decode(key, &v, "a number")
	return v
}

func (f *fields) boolean(key string, def bool) bool {
	v := def
	f.decode(key, &v, "true or false")
	return v
}

func (f *fields) str(key, def string) string {
	v := def
	f.decode(key, &v, "a string")
	return v
}

// want refuses a present field whose value differs from the allowed one.
func (f *fields) wantBool(key string, allowed bool, why string) {
	if f.has(key) && f.boolean(key, allowed) != allowed {
		f.fail("%s = %v is not supported (allowed: %v; %s)", key, !allowed, allowed, why)
	}
}

// ParseConfig reads a config.json's bytes; src names it in errors. Unknown
// architectures and options that change the model's function beyond what
// partbench computes are refused, naming the field, its value and what is
// allowed. Fields that do not change the function (dropout, token ids,
// initialiser ranges) are ignored.
func ParseConfig(data []byte, src string) (*Config, error) {
	f := &fields{src: src}
	if err := json.Unmarshal(data, &f.m); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", src, err)
	}
	var archs []string
	if !f.decode("architectures", &archs, "a list of strings") && f.err == nil {
		f.fail("architectures is missing (allowed: %s)", supportedArchitectures())
	}
	if f.err != nil {
		return nil, f.err
	}
	if len(archs) != 1 {
		return nil, fmt.Errorf("%s: architectures = %q: exactly one is allowed, one of %s", src, archs, supportedArchitectures())
	}
	a, ok := architectures[archs[0]]
	if !ok {
		return nil, fmt.Errorf("%s: architectures = [%q] is not supported (allowed: %s)", src, archs[0], supportedArchitectures())
	}
	if mt := f.str("model_type", a.modelType); mt != a.modelType {
		f.fail("model_type = %q does not match architectures %q (want %q)", mt, archs[0], a.modelType)
	}
	if f.has("quantization_config") {
		f.fail("quantization_config is set: quantized checkpoints are not supported (allowed: absent)")
	}
	c := &Config{Source: src, Architecture: archs[0], Family: a.family}
	c.TorchDType = f.str("dtype", f.str("torch_dtype", ""))
	switch a.family {
	case Llama:
		c.parseLlama(f)
	case GPT2:
		c.parseGPT2(f)
	}
	if f.err != nil {
		return nil, f.err
	}
	return c, nil
}

func supportedArchitectures() string {
	return strings.Join(sortedKeys(architectures), ", ")
}

func (c *Config) parseLlama(f *fields) {
	c.Layers = f.posInt("num_hidden_layers", 0)
	c.Hidden = f.posInt("hidden_size", 0)
	c.Heads = f.posInt("num_attention_heads", 0)
	c.KVHeads = f.posInt("num_key_value_heads", c.Heads)
	c.FFN = f.posInt("intermediate_size", 0)
	c.Vocab = f.posInt("vocab_size", 0)
	c.MaxPositions = f.posInt("max_position_embeddings", 0)
	if f.err != nil {
		return
	}
	if c.Hidden%c.Heads != 0 && !f.has("head_dim") {
		f.fail("hidden_size = %d is not a multiple of num_attention_heads = %d and head_dim is not given", c.Hidden, c.Heads)
		return
	}
	c.HeadDim = f.posInt("head_dim", c.Hidden/c.Heads)
	c.NormEps = f.float("rms_norm_eps", 1e-6) // LlamaConfig's default
	c.Norm = RMSNorm
	c.GatedMLP = true
	c.TieWordEmbeddings = f.boolean("tie_word_embeddings", false) // LlamaConfig's default
	c.Activation = f.str("hidden_act", "silu")
	if c.Activation != "silu" {
		f.fail("hidden_act = %q is not supported (allowed: \"silu\")", c.Activation)
	}
	f.wantBool("attention_bias", false, "the Llama family has no biases")
	f.wantBool("mlp_bias", false, "the Llama family has no biases")
	if f.has("sliding_window") {
		f.fail("sliding_window = %s is not supported (allowed: null or absent; sliding-window attention is not computed)", f.m["sliding_window"])
	}
	if f.err != nil {
		return
	}
	if c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0 {
		f.fail("num_key_value_heads = %d must divide num_attention_heads = %d", c.KVHeads, c.Heads)
	}
	if c.HeadDim%2 != 0 {
		f.fail("head_dim = %d: rotary embeddings need an even head dimension", c.HeadDim)
	}
	c.RopeTheta = c.ropeTheta(f)
}

// ropeTheta reads rope_theta at the top level (transformers ≤ 4) or under
// rope_parameters (transformers 5); both present must agree. Only the
// default rotary embedding is computed: any scaling type is refused.
func (c *Config) ropeTheta(f *fields) float64 {
	const def = 10000.0 // LlamaConfig's default
	top, hasTop := def, f.has("rope_theta")
	if hasTop {
		top = f.float("rope_theta", def)
	}
	var rp map[string]json.RawMessage
	f.decode("rope_parameters", &rp, "an object")
	var rs map[string]json.RawMessage
	f.decode("rope_scaling", &rs, "an object or null")
	for _, p := range []struct {
		key string
		m   map[string]json.RawMessage
	}{{"rope_parameters", rp}, {"rope_scaling", rs}} {
		if p.m == nil {
			continue
		}
		sub := &fields{src: f.src, m: p.m}
		for _, tkey := range []string{"rope_type", "type"} {
			if t := sub.str(tkey, "default"); t != "default" {
				f.fail("%s.%s = %q is not supported (allowed: \"default\"; scaled rotary embeddings are not computed)", p.key, tkey, t)
			}
		}
		if sub.has("partial_rotary_factor") {
			if v := sub.float("partial_rotary_factor", 1); v != 1 {
				f.fail("%s.partial_rotary_factor = %v is not supported (allowed: 1)", p.key, v)
			}
		}
		if sub.err != nil {
			f.fail("%s.%s", p.key, strings.TrimPrefix(sub.err.Error(), f.src+": "))
		}
	}
	theta := top
	if rp != nil {
		sub := &fields{src: f.src, m: rp}
		if sub.has("rope_theta") {
			nested := sub.float("rope_theta", def)
			if sub.err != nil {
				f.fail("rope_parameters.rope_theta = %s: must be a number", rp["rope_theta"])
			}
			if hasTop && nested != top {
				f.fail("rope_theta = %v and rope_parameters.rope_theta = %v disagree", top, nested)
			}
			theta = nested
		}
	}
	if theta <= 0 {
		f.fail("rope_theta = %v: must be positive", theta)
	}
	return theta
}

func (c *Config) parseGPT2(f *fields) {
	c.Layers = f.posInt("n_layer", 0)
	c.Hidden = f.posInt("n_embd", 0)
	c.Heads = f.posInt("n_head", 0)
	c.Vocab = f.posInt("vocab_size", 0)
	c.MaxPositions = f.posInt("n_positions", 0)
	if f.err != nil {
		return
	}
	if c.Hidden%c.Heads != 0 {
		f.fail("n_embd = %d is not a multiple of n_head = %d", c.Hidden, c.Heads)
		return
	}
	c.KVHeads = c.Heads
	c.HeadDim = c.Hidden / c.Heads
	c.FFN = f.posInt("n_inner", 4*c.Hidden) // null means 4 × n_embd
	c.NormEps = f.float("layer_norm_epsilon", 1e-5)
	c.Norm = LayerNorm
	c.LearnedPositions = true
	c.Bias = true
	c.Activation = f.str("activation_function", "gelu_new")
	if c.Activation != "gelu_new" && c.Activation != "gelu_pytorch_tanh" {
		f.fail("activation_function = %q is not supported (allowed: \"gelu_new\" or \"gelu_pytorch_tanh\", the tanh GELU)", c.Activation)
	}
	c.TieWordEmbeddings = f.boolean("tie_word_embeddings", true)
	if !c.TieWordEmbeddings {
		f.fail("tie_word_embeddings = false is not supported (allowed: true; the GPT-2 LM head is the token embedding)")
	}
	f.wantBool("scale_attn_weights", true, "scores are scaled by 1/√head_dim")
	f.wantBool("scale_attn_by_inverse_layer_idx", false, "no per-layer score scaling is computed")
	f.wantBool("reorder_and_upcast_attn", false, "attention is computed in the run's dtype")
	f.wantBool("add_cross_attention", false, "decoder-only")
}
