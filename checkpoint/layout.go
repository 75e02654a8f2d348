package checkpoint

import (
	"fmt"
	"regexp"
	"strings"
)

// TensorSpec is one parameter tensor a config implies, in the checkpoint's
// own layout: Llama linears are [out, in]; GPT-2's Conv1D weights are
// [in, out].
type TensorSpec struct {
	Name string
	// Alt is another name transformers has saved the same tensor under
	// (GPT-2 checkpoints saved from GPT2Model lack the "transformer." prefix).
	Alt   string
	Shape []int64
}

// Elements is the product of the shape.
func (s TensorSpec) Elements() int64 {
	n := int64(1)
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// ExpectedTensors lists every parameter tensor of c, in model order.
func ExpectedTensors(c *Config) []TensorSpec {
	var out []TensorSpec
	add := func(name string, shape ...int) {
		s := TensorSpec{Name: name, Shape: make([]int64, len(shape))}
		for i, d := range shape {
			s.Shape[i] = int64(d)
		}
		if c.Family == GPT2 {
			s.Alt = strings.TrimPrefix(name, "transformer.")
		}
		out = append(out, s)
	}
	h, q, kv := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	switch c.Family {
	case Llama:
		add("model.embed_tokens.weight", c.Vocab, h)
		for l := 0; l < c.Layers; l++ {
			p := fmt.Sprintf("model.layers.%d.", l)
			add(p+"input_layernorm.weight", h)
			add(p+"self_attn.q_proj.weight", q, h)
			add(p+"self_attn.k_proj.weight", kv, h)
			add(p+"self_attn.v_proj.weight", kv, h)
			add(p+"self_attn.o_proj.weight", h, q)
			add(p+"post_attention_layernorm.weight", h)
			add(p+"mlp.gate_proj.weight", c.FFN, h)
			add(p+"mlp.up_proj.weight", c.FFN, h)
			add(p+"mlp.down_proj.weight", h, c.FFN)
		}
		add("model.norm.weight", h)
		if !c.TieWordEmbeddings {
			add("lm_head.weight", c.Vocab, h)
		}
	case GPT2:
		add("transformer.wte.weight", c.Vocab, h)
		add("transformer.wpe.weight", c.MaxPositions, h)
		for l := 0; l < c.Layers; l++ {
			p := fmt.Sprintf("transformer.h.%d.", l)
			add(p+"ln_1.weight", h)
			add(p+"ln_1.bias", h)
			add(p+"attn.c_attn.weight", h, 3*h) // [in, out]: q|k|v columns
			add(p+"attn.c_attn.bias", 3*h)
			add(p+"attn.c_proj.weight", h, h)
			add(p+"attn.c_proj.bias", h)
			add(p+"ln_2.weight", h)
			add(p+"ln_2.bias", h)
			add(p+"mlp.c_fc.weight", h, c.FFN)
			add(p+"mlp.c_fc.bias", c.FFN)
			add(p+"mlp.c_proj.weight", c.FFN, h)
			add(p+"mlp.c_proj.bias", h)
		}
		add("transformer.ln_f.weight", h)
		add("transformer.ln_f.bias", h)
	}
	return out
}

// ParamCount counts c's parameters in closed form, from the config alone
// (tied weights once). It is computed independently of ExpectedTensors so
// that each checks the other.
func (c *Config) ParamCount() int64 {
	h, v, f, l := int64(c.Hidden), int64(c.Vocab), int64(c.FFN), int64(c.Layers)
	q, kv := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	switch c.Family {
	case Llama:
		layer := h*(q+2*kv) + q*h + 3*h*f + 2*h // attention, gated MLP, two RMSNorms
		heads := int64(2)
		if c.TieWordEmbeddings {
			heads = 1
		}
		return heads*v*h + l*layer + h // embeddings (+ LM head), layers, final norm
	case GPT2:
		layer := (h*3*h + 3*h) + (h*h + h) + (h*f + f) + (f*h + h) + 4*h // c_attn, c_proj, c_fc, c_proj, two LayerNorms
		return v*h + int64(c.MaxPositions)*h + l*layer + 2*h
	}
	return 0
}

// buffers are tensors some transformers versions save that are not
// parameters: GPT-2's causal-mask buffers and Llama's rotary inverse
// frequencies. They are ignored when present.
var buffers = map[Family]*regexp.Regexp{
	GPT2:  regexp.MustCompile(`^(transformer\.)?h\.\d+\.attn\.(bias|masked_bias)$`),
	Llama: regexp.MustCompile(`^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$`),
}

// Check verifies w against c: every expected tensor is present with the
// config's shape and a float dtype, and no other tensor is present besides
// known non-parameter buffers. It returns the parameter count it read.
func Check(c *Config, w *Weights) (int64, error) {
	used := map[string]bool{}
	var n int64
	for _, s := range ExpectedTensors(c) {
		t, err := w.Expect(s)
		if err != nil {
			return 0, fmt.Errorf("%s (config %s): %w", c.Architecture, c.Source, err)
		}
		used[t.Info.Name] = true
		n += t.Info.Elements()
	}
	for _, name := range w.Names() {
		if used[name] || buffers[c.Family].MatchString(name) {
			continue
		}
		t, _ := w.Tensor(name)
		return 0, fmt.Errorf("%s: unexpected tensor %q: not a parameter of %s as configured by %s", t.File, name, c.Architecture, c.Source)
	}
	return n, nil
}

// Verify reads dir's config.json and weights and checks one against the
// other; it returns the config and the parameter count of the checkpoint.
func Verify(dir string) (*Config, int64, error) {
	c, err := ReadConfig(dir)
	if err != nil {
		return nil, 0, err
	}
	w, err := OpenWeights(dir)
	if err != nil {
		return nil, 0, err
	}
	defer w.Close()
	n, err := Check(c, w)
	if err != nil {
		return nil, 0, err
	}
	return c, n, nil
}
