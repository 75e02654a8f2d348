package model

import "github.com/partbench/partbench/configs"

// Numerical constants of the synthetic model, shared by every backend.
const (
	NormEps   = 1e-5    // RMSNorm epsilon
	RopeTheta = 10000.0 // rotary embedding base θ
)

// Norm is a normalization layer's kind.
type Norm uint8

const (
	// RMSNorm is x / √(mean(x²) + ε) · w, without bias (Llama).
	RMSNorm Norm = iota + 1
	// LayerNorm is (x − mean(x)) / √(var(x) + ε) · w + b (GPT-2).
	LayerNorm
)

// Positions is how token positions enter the model.
type Positions uint8

const (
	// Rotary rotates each query and key head's pairs (2i, 2i+1) by
	// pos·θ^(−2i/head_dim) (RoPE, Llama).
	Rotary Positions = iota + 1
	// Learned adds row pos of a [max_positions, hidden] position embedding
	// to each token's input (GPT-2).
	Learned
)

// MLP is the feed-forward block's activation.
type MLP uint8

const (
	// GatedSiLU is silu(gate)·up over [gate | up] rows (three matrices).
	GatedSiLU MLP = iota + 1
	// GELUTanh is gelu(up) with the tanh approximation (two matrices).
	GELUTanh
)

// Gated reports whether the up projection holds a gate and an up half.
func (m MLP) Gated() bool { return m == GatedSiLU }

// String names the activation ("gated_silu", "gelu_tanh").
func (m MLP) String() string {
	switch m {
	case GatedSiLU:
		return "gated_silu"
	case GELUTanh:
		return "gelu_tanh"
	}
	return "mlp(?)"
}

// MarshalText writes the name, so JSON shows "gated_silu", not a number.
func (m MLP) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// Arch is what distinguishes one architecture's arithmetic from another's.
// Attention is grouped-query (kv_heads divides heads) in every architecture.
type Arch struct {
	Norm      Norm
	Positions Positions
	MLP       MLP
	NormEps   float64
	RopeTheta float64 // 0 without rotary positions
	// Bias: every linear has a bias (column shards split it, a row-parallel
	// linear's bias is added once, by TP index 0, before the all-reduce).
	Bias bool
	// Tied: the LM head is the token embedding transposed.
	Tied bool
	// Bidirectional: attention sees every position of the pass (encoder).
	Bidirectional bool
	// MaxPositions is the rows of the learned position embedding.
	MaxPositions int
}

// ArchOf is the architecture of a configured model. Llama-style (model.arch
// "llama" or empty): RMSNorm, rotary positions, a gated SiLU MLP when
// gated_mlp is set and a tanh-GELU MLP otherwise. GPT-2-style ("gpt2"):
// LayerNorm with bias, learned positions, tanh-GELU, biases, tied LM head.
func ArchOf(m configs.Model) Arch {
	a := Arch{Norm: RMSNorm, Positions: Rotary, MLP: GELUTanh, NormEps: NormEps, RopeTheta: RopeTheta,
		Tied: m.Tied(), Bidirectional: m.Encoder, MaxPositions: m.MaxPositions}
	if m.GatedMLP {
		a.MLP = GatedSiLU
	}
	if m.NormEps > 0 {
		a.NormEps = m.NormEps
	}
	if m.RopeTheta > 0 {
		a.RopeTheta = m.RopeTheta
	}
	if m.IsGPT2() {
		a.Norm, a.Positions, a.MLP, a.RopeTheta, a.Bias = LayerNorm, Learned, GELUTanh, 0, true
	}
	return a
}
