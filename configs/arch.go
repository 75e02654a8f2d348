package configs

import (
	"fmt"

	"github.com/partbench/partbench/arch"
)

// ModelArch selects the architecture of a Model beyond its shape. Every
// field's zero value is the Llama-style decoder the schema always described
// (RMSNorm ε 1e-5, rotary positions θ 10000, causal attention, no biases,
// an LM head of its own), so configs written before these fields existed
// mean what they meant.
type ModelArch struct {
	// Arch is a registered family's name (package arch, one file per
	// family): "llama" (or empty: RMSNorm, rotary positions, no biases) or
	// "gpt2" (LayerNorm with bias, learned absolute positions, biases on every
	// linear, tanh-GELU MLP, LM head tied to the token embedding).
	Arch string `toml:"arch" json:"arch,omitempty"`
	// Encoder makes attention bidirectional: one forward pass over the
	// prompt, no decode (a BERT-like workload).
	Encoder bool `toml:"encoder" json:"encoder,omitempty"`
	// NormEps is the norms' ε (0: 1e-5).
	NormEps float64 `toml:"norm_eps" json:"norm_eps,omitempty"`
	// RopeTheta is the rotary base θ (0: 10000); llama only.
	RopeTheta float64 `toml:"rope_theta" json:"rope_theta,omitempty"`
	// MaxPositions is the rows of the learned position embedding (gpt2:
	// required, at least workload.context).
	MaxPositions int `toml:"max_positions" json:"max_positions,omitempty"`
	// TiedEmbeddings: the LM head is the token embedding transposed (always
	// so for gpt2; llama checkpoints may say tie_word_embeddings).
	TiedEmbeddings bool `toml:"tied_embeddings" json:"tied_embeddings,omitempty"`
	// Dir is a Hugging Face model directory: its config.json gives the
	// model's shape and architecture (modeldir.go), and a run reads its
	// safetensors weights.
	Dir string `toml:"dir" json:"dir,omitempty"`
	// desc is Dir's config.json, read once (Description).
	desc *arch.Description
}

// Names of the registered families existing callers spell out; every
// family's name is its arch.Family.Name (arch.Names lists them).
const (
	ArchLlama = "llama"
	ArchGPT2  = "gpt2"
)

// Family is the model's architecture family (model.arch; absent: the
// default family, Llama). A name Validate refuses is the default family.
func (m Model) Family() *arch.Family { return arch.MustLookup(m.Arch) }

// Tied reports whether the LM head is the token embedding.
func (m Model) Tied() bool { return m.TiedEmbeddings || m.Family().TiedAlways }

// Features is the architecture the model computes: its family's fixed
// features with the config's choices (gated_mlp, norm_eps, rope_theta,
// tied_embeddings, encoder, max_positions).
func (m Model) Features() arch.Features {
	return m.Family().Features(arch.Options{GatedMLP: m.GatedMLP, NormEps: m.NormEps, RopeTheta: m.RopeTheta,
		TiedEmbeddings: m.TiedEmbeddings, Bidirectional: m.Encoder, MaxPositions: m.MaxPositions})
}

// ElemType is the model's element type (model.dtype); 0 when the name is
// not one Validate accepts.
func (m Model) ElemType() arch.DType {
	d, _ := arch.ParseDType(m.DType)
	return d
}

// Description is the config.json description the model was read from
// (model.dir, ModelDirRun, GenerateConfig), read once when the config was
// loaded; nil when the config gives the shape itself.
func (m Model) Description() *arch.Description { return m.desc }

// validateArch checks the architecture fields against the model's shape
// and the workload; each problem names its field, value and what is allowed.
func (c *Config) validateArch() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	m := c.Model
	fam, err := arch.Lookup(m.Arch)
	if err != nil {
		errs = append(errs, err)
		fam = m.Family()
	}
	if m.NormEps < 0 || m.NormEps >= 1 {
		add("model.norm_eps: must be in [0, 1) (0: 1e-5) (got %g)", m.NormEps)
	}
	if m.RopeTheta < 0 {
		add("model.rope_theta: must be ≥ 0 (0: 10000) (got %g)", m.RopeTheta)
	}
	if m.MaxPositions < 0 || m.MaxPositions > 1<<24 {
		add("model.max_positions: must be in [0, %d] (got %d)", 1<<24, m.MaxPositions)
	}
	name := fam.Name
	if fam.Positions == arch.Learned {
		if m.RopeTheta != 0 {
			add("model.rope_theta: %s has learned positions, not rotary ones (got %g; allowed: 0 or absent)", name, m.RopeTheta)
		}
		if m.MaxPositions < 1 {
			add("model.max_positions: %s needs its learned position embedding's rows, at least workload.context = %d (got %d)", name, c.Workload.Context, m.MaxPositions)
		}
	}
	if fam.MLP != 0 && m.GatedMLP != fam.MLP.Gated() {
		add("model.gated_mlp: %s's MLP is %s (got %v; allowed: %v)", name, fam.MLP, m.GatedMLP, fam.MLP.Gated())
	}
	if fam.MultiHead && m.KVHeads != 0 && m.KVHeads != m.Heads {
		add("model.kv_heads: %s has multi-head attention, kv_heads = heads = %d (got %d)", name, m.Heads, m.KVHeads)
	}
	if fam.TiedAlways && m.Embeddings != m.LMHead {
		add("model.lm_head: %s's LM head is tied to the embedding, so embeddings and lm_head go together (got embeddings = %v, lm_head = %v)", name, m.Embeddings, m.LMHead)
	}
	if m.MaxPositions > 0 && c.Workload.Context > m.MaxPositions {
		add("workload.context: must be ≤ model.max_positions = %d (got %d)", m.MaxPositions, c.Workload.Context)
	}
	if m.TiedEmbeddings && (!m.Embeddings || !m.LMHead) {
		add("model.tied_embeddings: the LM head is the embedding, so embeddings and lm_head must both be true (got embeddings = %v, lm_head = %v)", m.Embeddings, m.LMHead)
	}
	if m.Encoder && c.Workload.HasPhase("decode") {
		add("workload.phases: an encoder (model.encoder = true) runs one forward pass: allowed [\"prefill\"] (got %q)", c.Workload.Phases)
	}
	return errs
}
