package model

import (
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

// Mix is the splitmix64 finalizer every key is built from (a GPU kernel
// that finishes a key on the device transliterates it).
func Mix(z uint64) uint64 { return mix(z) }

// tensorID hashes a tensor name (FNV-1a, 64 bits).
func tensorID(tensor string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(tensor))
	return h.Sum64()
}

// KeyBase is the part of an element's key that does not depend on its row
// and column: mix(mix(mix(seed) ^ FNV-1a(tensor)) ^ layer). KeyAt finishes it.
func KeyBase(seed int64, layer int, tensor string) uint64 {
	return keyBase(seed, layer, tensorID(tensor))
}

func keyBase(seed int64, layer int, tid uint64) uint64 {
	h := mix(uint64(seed))
	h = mix(h ^ tid)
	return mix(h ^ uint64(int64(layer)))
}

// KeyAt is the key of element (row, col) from its KeyBase:
// mix(mix(base ^ row) ^ col).
func KeyAt(base uint64, row, col int) uint64 {
	return mix(mix(base^uint64(int64(row))) ^ uint64(int64(col)))
}

// Unit maps a hash to a float32 uniform in [−1, 1): the top 24 bits, exact
// in float32.
func Unit(h uint64) float32 {
	return float32(h>>40)/float32(1<<24)*2 - 1
}

// Uniform is element (row, col) of tensor in layer of the full model,
// uniform in [−1, 1). The same key always gives the same value.
func Uniform(seed int64, layer int, tensor string, row, col int) float32 {
	return Unit(KeyAt(KeyBase(seed, layer, tensor), row, col))
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
	return int(KeyAt(KeyBase(seed, -1, Prompt), seq, pos) % uint64(vocab))
}

// Synthetic writes the input vector of token id for a model without an
// embedding: uniform in [−1, 1), the same on every TP rank.
func Synthetic(seed int64, token int, out []float32) {
	base := KeyBase(seed, -1, SyntheticInput)
	for c := range out {
		out[c] = Unit(KeyAt(base, token, c))
	}
}

// normNoise is the spread of the norm weights around 1.
const normNoise = 0.1

// NormWeight is element i of a full norm vector: 1 + 0.1·u, u uniform in [−1, 1).
func NormWeight(seed int64, layer int, tensor string, i int) float32 {
	return 1 + normNoise*Uniform(seed, layer, tensor, 0, i)
}

// matrix is element (row, col) of a full weight matrix: uniform in
// [−a, a] with a = 1/√fanIn.
type matrix struct {
	base  uint64
	scale float32
}

func newMatrix(seed int64, layer int, tensor string, fanIn int) matrix {
	return matrix{KeyBase(seed, layer, tensor), float32(1 / math.Sqrt(float64(fanIn)))}
}

func (m matrix) at(row, col int) float32 { return m.scale * Unit(KeyAt(m.base, row, col)) }
