package arch

import "regexp"

// GPT2 is the GPT-2-style decoder: LayerNorm with bias, learned absolute
// positions, tanh-GELU MLP, biases on every linear, multi-head attention,
// Conv1D weights stored [in, out], LM head tied to the token embedding.
var GPT2 = &Family{
	Name:      "gpt2",
	HF:        []HFName{{"GPT2LMHeadModel", "gpt2"}},
	Norm:      LayerNorm,
	Positions: Learned,
	MLP:       GELUTanh,
	Bias:      true, TiedAlways: true, MultiHead: true,
	Layout: FusedQKV,
	Names: TensorNames{
		Embed: "transformer.wte.weight", PosEmbed: "transformer.wpe.weight",
		FinalNorm: "transformer.ln_f.weight", FinalNormBias: "transformer.ln_f.bias",
		Layer:    "transformer.h.%d.",
		AttnNorm: "ln_1.weight", AttnNormBias: "ln_1.bias", MLPNorm: "ln_2.weight", MLPNormBias: "ln_2.bias",
		QKV: "attn.c_attn.weight", QKVBias: "attn.c_attn.bias", O: "attn.c_proj.weight", OBias: "attn.c_proj.bias",
		Up: "mlp.c_fc.weight", UpBias: "mlp.c_fc.bias", Down: "mlp.c_proj.weight", DownBias: "mlp.c_proj.bias",
		AltPrefix: "transformer.", // checkpoints saved from GPT2Model
	},
	parse:   parseGPT2,
	buffers: regexp.MustCompile(`^(transformer\.)?h\.\d+\.attn\.(bias|masked_bias)$`),
}

func init() { register(GPT2) }

func parseGPT2(f *fields, c *Description) {
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
	c.NormEps = f.posFloat("layer_norm_epsilon", 1e-5)
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
