package cpu

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/partbench/partbench/configs"
)

// Weights are generated element by element from a hash of (seed, layer,
// tensor, row, column) of the full, unsharded matrix, so a rank only ever
// generates its own shard and every partitioning holds slices of the same
// model. Layer is −1 outside the transformer layers.

// mix is the splitmix64 finalizer.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// tensorID hashes a tensor name (FNV-1a, 64 bits).
func tensorID(tensor string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(tensor))
	return h.Sum64()
}

// keyOf hashes one element's key; tid is tensorID(tensor).
func keyOf(seed int64, layer int, tid uint64, row, col int) uint64 {
	h := mix(uint64(seed))
	h = mix(h ^ tid)
	h = mix(h ^ uint64(int64(layer)))
	h = mix(h ^ uint64(int64(row)))
	return mix(h ^ uint64(int64(col)))
}

// unit maps a hash to a float32 uniform in [−1, 1): the top 24 bits, exact
// in float32.
func unit(h uint64) float32 {
	return float32(h>>40)/float32(1<<24)*2 - 1
}

// Uniform is element (row, col) of tensor in layer of the full model,
// uniform in [−1, 1). The same key always gives the same value.
func Uniform(seed int64, layer int, tensor string, row, col int) float32 {
	return unit(keyOf(seed, layer, tensorID(tensor), row, col))
}

// DefaultTokenVocab is the token range of a model without a vocabulary.
const DefaultTokenVocab = 50000

// TokenVocab is the range of token ids a model's inputs are drawn from: its
// vocabulary, or DefaultTokenVocab when it has none.
func TokenVocab(m configs.Model) int {
	if m.Vocab > 0 {
		return m.Vocab
	}
	return DefaultTokenVocab
}

// PromptToken is the token of global sequence seq at position pos, in
// [0, vocab). Prefill reads the prompt from it, and teacher-forced decode
// feeds PromptToken(seed, seq, p, vocab) as the input of position p, so every
// partitioning runs identical inputs.
func PromptToken(seed int64, seq, pos, vocab int) int {
	return int(keyOf(seed, -1, tensorID("prompt"), seq, pos) % uint64(vocab))
}

// Full-model tensor names and their generation.
const (
	tWQ        = "wq"     // [hidden, heads·hd]
	tWK        = "wk"     // [hidden, kv_heads·hd]
	tWV        = "wv"     // [hidden, kv_heads·hd]
	tWO        = "wo"     // [heads·hd, hidden]
	tWGate     = "w_gate" // [hidden, ffn] (gated MLP)
	tWUp       = "w_up"   // [hidden, ffn]
	tWDown     = "w_down" // [ffn, hidden]
	tAttnNorm  = "attn_norm"
	tMLPNorm   = "mlp_norm"
	tFinalNorm = "final_norm"
	tEmbed     = "embed"     // [vocab_padded, hidden], rows ≥ vocab zero
	tLMHead    = "lm_head"   // [hidden, vocab_padded], columns ≥ vocab zero
	tSynthetic = "synthetic" // [token, hidden]: inputs of a model without embedding
)

// normNoise is the spread of the norm weights around 1.
const normNoise = 0.1

// matrix is element (row, col) of a full weight matrix: uniform in
// [−a, a] with a = 1/√fanIn.
type matrix struct {
	seed  int64
	layer int
	tid   uint64
	scale float32
}

func newMatrix(seed int64, layer int, tensor string, fanIn int) matrix {
	return matrix{seed, layer, tensorID(tensor), float32(1 / math.Sqrt(float64(fanIn)))}
}

func (m matrix) at(row, col int) float32 {
	return m.scale * unit(keyOf(m.seed, m.layer, m.tid, row, col))
}

// NormWeight is element i of a full norm vector: 1 + 0.1·u, u uniform in [−1, 1).
func NormWeight(seed int64, layer int, tensor string, i int) float32 {
	return 1 + normNoise*Uniform(seed, layer, tensor, 0, i)
}

// tensor is a rank's shard, row-major [k][n] (a vector has k = 1).
type tensor struct {
	k, n int
	data []float32
}

func newTensor(k, n int) *tensor { return &tensor{k: k, n: n, data: make([]float32, k*n)} }

// shard describes the rank's share of the model: TP index t of T.
type shard struct {
	m    configs.Model
	seed int64
	t, T int
	vp   int // padded vocabulary
}

func (s shard) heads() int   { return s.m.Heads / s.T }
func (s shard) kvHeads() int { return s.m.KVHeads / s.T }
func (s shard) ffn() int     { return s.m.FFN / s.T }

// wqkv is the column-parallel QKV shard: [hidden, (hl + 2·kvl)·hd] with
// columns [q of query heads t·hl… | k of kv heads t·kvl… | v of the same].
func (s shard) wqkv(layer int) *tensor {
	H, hd := s.m.Hidden, s.m.HeadDim
	ql, kvl := s.heads()*hd, s.kvHeads()*hd
	w := newTensor(H, ql+2*kvl)
	parts := []struct {
		m     matrix
		off   int // first full column
		width int
	}{
		{newMatrix(s.seed, layer, tWQ, H), s.t * ql, ql},
		{newMatrix(s.seed, layer, tWK, H), s.t * kvl, kvl},
		{newMatrix(s.seed, layer, tWV, H), s.t * kvl, kvl},
	}
	for r := 0; r < H; r++ {
		c := 0
		for _, p := range parts {
			for j := 0; j < p.width; j++ {
				w.data[r*w.n+c] = p.m.at(r, p.off+j)
				c++
			}
		}
	}
	return w
}

// wo is the row-parallel output projection: rows of the rank's query heads.
func (s shard) wo(layer int) *tensor {
	H, hd := s.m.Hidden, s.m.HeadDim
	ql := s.heads() * hd
	m := newMatrix(s.seed, layer, tWO, s.m.Heads*hd)
	w := newTensor(ql, H)
	for r := 0; r < ql; r++ {
		for c := 0; c < H; c++ {
			w.data[r*H+c] = m.at(s.t*ql+r, c)
		}
	}
	return w
}

// wUp is the column-parallel up projection: [hidden, fl] columns
// [t·fl, (t+1)·fl) of w_up, preceded by the same columns of w_gate when the
// MLP is gated ([gate shard | up shard]).
func (s shard) wUp(layer int) *tensor {
	H, fl := s.m.Hidden, s.ffn()
	names := []string{tWUp}
	if s.m.GatedMLP {
		names = []string{tWGate, tWUp}
	}
	w := newTensor(H, len(names)*fl)
	for i, name := range names {
		m := newMatrix(s.seed, layer, name, H)
		for r := 0; r < H; r++ {
			for j := 0; j < fl; j++ {
				w.data[r*w.n+i*fl+j] = m.at(r, s.t*fl+j)
			}
		}
	}
	return w
}

// wDown is the row-parallel down projection: rows [t·fl, (t+1)·fl).
func (s shard) wDown(layer int) *tensor {
	H, fl := s.m.Hidden, s.ffn()
	m := newMatrix(s.seed, layer, tWDown, s.m.FFN)
	w := newTensor(fl, H)
	for r := 0; r < fl; r++ {
		for c := 0; c < H; c++ {
			w.data[r*H+c] = m.at(s.t*fl+r, c)
		}
	}
	return w
}

// norm is a replicated norm vector.
func (s shard) norm(layer int, name string) *tensor {
	w := newTensor(1, s.m.Hidden)
	for i := range w.data {
		w.data[i] = NormWeight(s.seed, layer, name, i)
	}
	return w
}

// embed is the vocab-parallel embedding shard: rows [t·Vp/T, (t+1)·Vp/T) of
// [Vp, hidden], uniform in [−1, 1); rows ≥ vocab are zero.
func (s shard) embed() *tensor {
	H, vl := s.m.Hidden, s.vp/s.T
	w := newTensor(vl, H)
	tid := tensorID(tEmbed)
	for r := 0; r < vl; r++ {
		v := s.t*vl + r
		if v >= s.m.Vocab {
			continue
		}
		for c := 0; c < H; c++ {
			w.data[r*H+c] = unit(keyOf(s.seed, -1, tid, v, c))
		}
	}
	return w
}

// lmHead is the vocab-parallel LM head shard: columns [t·Vp/T, (t+1)·Vp/T)
// of [hidden, Vp]; columns ≥ vocab are zero.
func (s shard) lmHead() *tensor {
	H, vl := s.m.Hidden, s.vp/s.T
	m := newMatrix(s.seed, -1, tLMHead, H)
	w := newTensor(H, vl)
	for r := 0; r < H; r++ {
		for j := 0; j < vl; j++ {
			if v := s.t*vl + j; v < s.m.Vocab {
				w.data[r*vl+j] = m.at(r, v)
			}
		}
	}
	return w
}

// synthetic writes the input vector of token id (a model without embedding):
// uniform in [−1, 1), the same on every TP rank.
func synthetic(seed int64, token int, out []float32) {
	tid := tensorID(tSynthetic)
	for c := range out {
		out[c] = unit(keyOf(seed, -1, tid, token, c))
	}
}

func (s shard) check() error {
	m := s.m
	switch {
	case m.Heads%s.T != 0 || m.KVHeads%s.T != 0 || m.FFN%s.T != 0:
		return fmt.Errorf("tp %d does not divide heads %d, kv_heads %d and ffn %d", s.T, m.Heads, m.KVHeads, m.FFN)
	case m.HeadDim%2 != 0:
		return fmt.Errorf("head_dim %d is odd: rotary embeddings rotate pairs", m.HeadDim)
	case s.vp%s.T != 0:
		return fmt.Errorf("padded vocabulary %d is not a multiple of tp %d", s.vp, s.T)
	}
	return nil
}
