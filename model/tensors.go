package model

import "fmt"

// Tensor names: the full model's (the generator's keys) and the shards a
// rank holds (an op's Tensor).
const (
	WQ        = "wq"     // [hidden, heads·hd]
	WK        = "wk"     // [hidden, kv_heads·hd]
	WV        = "wv"     // [hidden, kv_heads·hd]
	WQKV      = "wqkv"   // a rank's fused shard [hidden, (hl + 2·kvl)·hd]
	WO        = "wo"     // [heads·hd, hidden]
	WGate     = "w_gate" // [hidden, ffn] (gated MLP)
	WUp       = "w_up"   // [hidden, ffn]; a rank's shard is [gate | up] when gated
	WDown     = "w_down" // [ffn, hidden]
	AttnNorm  = "attn_norm"
	MLPNorm   = "mlp_norm"
	FinalNorm = "final_norm"
	Embed     = "embed"   // [vocab_padded, hidden], rows ≥ vocab zero
	LMHead    = "lm_head" // [hidden, vocab_padded], columns ≥ vocab zero

	// GPT-2-style architectures (Arch.Bias, LayerNorm, Learned positions).
	BQKV          = "b_qkv"           // [1, (hl + 2·kvl)·hd], split like wqkv's columns
	BO            = "b_o"             // [1, hidden], held and added by TP index 0
	BUp           = "b_up"            // [1, ffn shard]
	BDown         = "b_down"          // [1, hidden], held and added by TP index 0
	AttnNormBias  = "attn_norm.bias"  // [1, hidden]
	MLPNormBias   = "mlp_norm.bias"   // [1, hidden]
	FinalNormBias = "final_norm.bias" // [1, hidden]
	PosEmbed      = "pos_embed"       // [max_positions, hidden], replicated

	SyntheticInput = "synthetic" // [token, hidden]: inputs of a model without embedding
	Prompt         = "prompt"    // PromptToken's key
)

// LayerTensors are the shards every transformer layer of a Llama-style
// model holds, in order.
var LayerTensors = []string{AttnNorm, WQKV, WO, MLPNorm, WUp, WDown}

// LayerTensors are the shards each transformer layer holds on this rank, in
// order: LayerTensors, plus with biases each linear's (row-parallel ones on
// TP index 0 only) and each LayerNorm's bias.
func (s Shard) LayerTensors() []string {
	out := []string{AttnNorm}
	if s.Arch.Norm == LayerNorm {
		out = append(out, AttnNormBias)
	}
	out = append(out, WQKV)
	if s.Arch.Bias {
		out = append(out, BQKV)
	}
	out = append(out, WO)
	if b := s.RowBias(BO); b != "" {
		out = append(out, b)
	}
	out = append(out, MLPNorm)
	if s.Arch.Norm == LayerNorm {
		out = append(out, MLPNormBias)
	}
	out = append(out, WUp)
	if s.Arch.Bias {
		out = append(out, BUp)
	}
	out = append(out, WDown)
	if b := s.RowBias(BDown); b != "" {
		out = append(out, b)
	}
	return out
}

// NormBias is the bias of norm tensor name ("" for RMSNorm).
func (s Shard) NormBias(name string) string {
	if s.Arch.Norm != LayerNorm {
		return ""
	}
	return name + ".bias"
}

// ColBias is the bias of a column-parallel linear's bias tensor b ("" without
// biases).
func (s Shard) ColBias(b string) string {
	if !s.Arch.Bias {
		return ""
	}
	return b
}

// RowBias is the bias a row-parallel linear adds on this rank: b on TP index
// 0, "" elsewhere and without biases (the all-reduce that follows sums it in
// once).
func (s Shard) RowBias(b string) string {
	if !s.Arch.Bias || s.Index != 0 {
		return ""
	}
	return b
}

// Shard is one tensor-parallel rank's share of the model: the widths it
// holds, each split width already divided by the TP degree (partition
// computes it, once), and which slice it is.
type Shard struct {
	Arch    Arch
	Index   int // TP index: the shard holds slice Index of every split tensor
	Hidden  int
	HeadDim int
	Heads   int // query heads on this rank
	KVHeads int // key/value heads on this rank
	FFN     int // MLP columns on this rank (per matrix)
	// Vocab is the model's vocabulary (0: none); VocabOffset and VocabSize
	// are the rows of the padded vocabulary this rank's embedding and LM
	// head shards hold.
	Vocab                  int
	VocabOffset, VocabSize int
}

// QKVWidth is a token's fused q, k and v on this rank.
func (s Shard) QKVWidth() int { return (s.Heads + 2*s.KVHeads) * s.HeadDim }

// AttnWidth is a token's attention output on this rank.
func (s Shard) AttnWidth() int { return s.Heads * s.HeadDim }

// KVWidth is a token's cached keys (or values) on this rank.
func (s Shard) KVWidth() int { return s.KVHeads * s.HeadDim }

// UpWidth is a token's up projection on this rank: gate and up when gated.
func (s Shard) UpWidth() int {
	if s.Arch.MLP.Gated() {
		return 2 * s.FFN
	}
	return s.FFN
}

// ActWidth is a token's activated MLP width on this rank.
func (s Shard) ActWidth() int { return s.FFN }

// TensorShape is the [k][n] of a shard tensor on this rank (docs/numerics.md,
// "Sharding"); ok is false for a name that is not a shard tensor.
func (s Shard) TensorShape(name string) (k, n int, ok bool) {
	H := s.Hidden
	switch name {
	case WQKV:
		return H, s.QKVWidth(), true
	case WO:
		return s.AttnWidth(), H, true
	case WUp:
		return H, s.UpWidth(), true
	case WDown:
		return s.ActWidth(), H, true
	case AttnNorm, MLPNorm, FinalNorm, AttnNormBias, MLPNormBias, FinalNormBias, BO, BDown:
		return 1, H, true
	case BQKV:
		return 1, s.QKVWidth(), true
	case BUp:
		return 1, s.UpWidth(), true
	case PosEmbed:
		return s.Arch.MaxPositions, H, true
	case Embed:
		return s.VocabSize, H, true
	case LMHead:
		return H, s.VocabSize, true
	}
	return 0, 0, false
}

// Check reports a shard the arithmetic cannot run.
func (s Shard) Check() error {
	if s.Arch.Positions == Rotary && s.HeadDim%2 != 0 {
		return fmt.Errorf("head_dim %d is odd: rotary embeddings rotate pairs", s.HeadDim)
	}
	return nil
}
