package arch

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Llama is the Llama-style decoder (Llama 2/3, Mistral without a sliding
// window): RMSNorm, rotary positions, no biases, grouped-query attention;
// the MLP is gated SiLU (a config may choose tanh-GELU with gated_mlp =
// false). It is the family of a config that names none.
var Llama = &Family{
	Name: "llama", Default: true,
	HF: []HFName{
		{"LlamaForCausalLM", "llama"},
		{"MistralForCausalLM", "mistral"}, // without a sliding window it is Llama
	},
	Norm: RMSNorm, Positions: Rotary, Layout: SeparateQKV,
	Names: TensorNames{
		Embed: "model.embed_tokens.weight", FinalNorm: "model.norm.weight", LMHead: "lm_head.weight",
		Layer:    "model.layers.%d.",
		AttnNorm: "input_layernorm.weight", MLPNorm: "post_attention_layernorm.weight",
		Q: "self_attn.q_proj.weight", K: "self_attn.k_proj.weight", V: "self_attn.v_proj.weight",
		O: "self_attn.o_proj.weight", Gate: "mlp.gate_proj.weight", Up: "mlp.up_proj.weight", Down: "mlp.down_proj.weight",
	},
	parse:   parseLlama,
	buffers: regexp.MustCompile(`^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$`),
}

func init() { register(Llama) }

func parseLlama(f *fields, c *Description) {
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
	c.NormEps = f.posFloat("rms_norm_eps", 1e-6) // LlamaConfig's default
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
	c.RopeTheta = ropeTheta(f)
}

// ropeTheta reads rope_theta at the top level (transformers ≤ 4) or under
// rope_parameters (transformers 5); both present must agree. Only the
// default rotary embedding is computed: any scaling type is refused.
func ropeTheta(f *fields) float64 {
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
