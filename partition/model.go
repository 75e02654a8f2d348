package partition

import (
	"fmt"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/configs"
)

// DTypeBytes is the size of one element of a model data type named dtype
// (arch.ParseDType); configs.Validate refuses any other name, so an unknown
// one here is a programming error.
func DTypeBytes(dtype string) int {
	d, err := arch.ParseDType(dtype)
	if err != nil {
		panic(fmt.Sprintf("partition: unknown dtype %q", dtype))
	}
	return d.Bytes()
}

// LayerParams counts the parameters of one transformer layer.
type LayerParams struct {
	QKV   int64 // hidden × (heads + 2·kv_heads)·head_dim
	O     int64 // heads·head_dim × hidden
	Up    int64 // hidden × ffn, twice when gated (gate and up)
	Down  int64 // ffn × hidden
	Norms int64 // two RMSNorm weight vectors of hidden (LayerNorm: weight and bias each)
	// Biases of the linears (gpt2): qkv, o, up and down outputs.
	Biases int64
}

// Matrices is the parameters TP shards.
func (p LayerParams) Matrices() int64 { return p.QKV + p.O + p.Up + p.Down }

// Total is every parameter of the layer.
func (p LayerParams) Total() int64 { return p.Matrices() + p.Norms + p.Biases }

// Layer counts the parameters of one layer of m.
func Layer(m configs.Model) LayerParams {
	h, hd := int64(m.Hidden), int64(m.HeadDim)
	up := h * int64(m.FFN)
	if m.GatedMLP {
		up *= 2
	}
	lp := LayerParams{
		QKV:  h * int64(m.Heads+2*m.KVHeads) * hd,
		O:    int64(m.Heads) * hd * h,
		Up:   up,
		Down: int64(m.FFN) * h,
	}
	a := m.Features()
	lp.Norms = 2 * a.Norm.Params(h)
	if a.Bias {
		lp.Biases = int64(m.Heads+2*m.KVHeads)*hd + h + up/h + h // qkv, o, up (gate and up when gated), down outputs
	}
	return lp
}

// finalNormParams is the final norm's weight (and bias with LayerNorm).
func finalNormParams(m configs.Model) int64 {
	return m.Features().Norm.Params(int64(m.Hidden))
}

// PaddedVocab is the vocabulary rounded up to a multiple of tp, so each TP
// rank holds an equal shard of the embedding and the LM head.
func PaddedVocab(m configs.Model, tp int) int {
	return (m.Vocab + tp - 1) / tp * tp
}

// ParamsTotal counts every parameter of the model as configured: the layers,
// plus the embedding (and learned positions), the final norm and the LM head
// when included (unpadded; a tied LM head is the embedding, counted once).
func ParamsTotal(m configs.Model) int64 {
	n := int64(m.Layers) * Layer(m).Total()
	if m.Embeddings {
		n += int64(m.Vocab) * int64(m.Hidden)
		if m.Features().Positions == arch.Learned {
			n += int64(m.MaxPositions) * int64(m.Hidden)
		}
	}
	if m.LMHead {
		n += finalNormParams(m)
		if !m.Tied() {
			n += int64(m.Hidden) * int64(m.Vocab)
		}
	}
	return n
}

// KVBytesPerToken is the K and V cache of one token in one layer, all KV
// heads, in the model's dtype: 2 (K and V) × kv_heads × head_dim × element
// bytes. It is the one definition of the KV cache's size: a tensor-parallel
// rank's share (Plan.KVTokenBytes) and every byte count built on that
// derive from it.
func KVBytesPerToken(m configs.Model) int64 {
	return 2 * int64(m.KVHeads) * int64(m.HeadDim) * int64(DTypeBytes(m.DType))
}

// KVHeadsPerRank is the KV heads each of tp tensor-parallel ranks holds:
// an even split, since configs refuses a tp that does not divide kv_heads
// (configs.Model.TPIndivisible). It is the one statement of the split
// (Plan.Shard's KVHeads, Plan.KVTokenBytes).
func KVHeadsPerRank(m configs.Model, tp int) int { return m.KVHeads / tp }

// KVBytesPerLayer is one layer's KV cache for batch sequences of tokens each.
func KVBytesPerLayer(m configs.Model, batch, tokens int) int64 {
	return int64(batch) * int64(tokens) * KVBytesPerToken(m)
}
