package arch

// Defaults of the numerical constants a config may leave at 0.
const (
	DefaultNormEps   = 1e-5    // the norms' ε
	DefaultRopeTheta = 10000.0 // rotary embedding base θ
)

// Norm is a normalization layer's kind.
type Norm uint8

const (
	// RMSNorm is x / √(mean(x²) + ε) · w, without bias (Llama).
	RMSNorm Norm = iota + 1
	// LayerNorm is (x − mean(x)) / √(var(x) + ε) · w + b (GPT-2).
	LayerNorm
)

// String names the norm ("rmsnorm", "layernorm").
func (n Norm) String() string {
	switch n {
	case RMSNorm:
		return "rmsnorm"
	case LayerNorm:
		return "layernorm"
	}
	return "norm(?)"
}

// Params is one norm's parameters over hidden features: a weight, and a
// bias with LayerNorm.
func (n Norm) Params(hidden int64) int64 {
	if n == LayerNorm {
		return 2 * hidden
	}
	return hidden
}

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

// Layout is how a family's checkpoint stores the attention and MLP
// weights, which decides how a rank's shard is read from it.
type Layout uint8

const (
	// SeparateQKV: q_proj, k_proj, v_proj, o_proj and the MLP's linears are
	// separate [out, in] tensors; q and k heads are in rotate-half order
	// (transformers' Llama).
	SeparateQKV Layout = iota + 1
	// FusedQKV: one Conv1D c_attn of [in, 3·hidden] holds q | k | v columns,
	// every linear is stored [in, out] with a bias (transformers' GPT-2).
	FusedQKV
)

// Features is what distinguishes one architecture's arithmetic from
// another's: what partition counts and every backend computes. Attention
// is grouped-query (kv_heads divides heads) in every architecture.
type Features struct {
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

// Options are a configured model's choices within its family: what a
// config (or config.json) says beyond the family's fixed features.
type Options struct {
	GatedMLP           bool    // the MLP when the family leaves it open
	NormEps, RopeTheta float64 // 0: the defaults
	TiedEmbeddings     bool
	Bidirectional      bool
	MaxPositions       int
}

// Features is f's features with the options o.
func (f *Family) Features(o Options) Features {
	a := Features{Norm: f.Norm, Positions: f.Positions, MLP: f.MLP, NormEps: DefaultNormEps, Bias: f.Bias,
		Tied: o.TiedEmbeddings || f.TiedAlways, Bidirectional: o.Bidirectional, MaxPositions: o.MaxPositions}
	if a.MLP == 0 {
		a.MLP = GELUTanh
		if o.GatedMLP {
			a.MLP = GatedSiLU
		}
	}
	if o.NormEps > 0 {
		a.NormEps = o.NormEps
	}
	if f.Positions == Rotary {
		a.RopeTheta = DefaultRopeTheta
		if o.RopeTheta > 0 {
			a.RopeTheta = o.RopeTheta
		}
	}
	return a
}
