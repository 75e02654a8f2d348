package cuda

import "hash/fnv"

// The kernels pb_prompt_tokens, pb_synthetic and pb_teacher compute
// exec/cpu's PromptToken and synthetic inputs on the GPU, so a captured
// decode step needs no host data. This is the Go mirror of their
// arithmetic, which the tests hold against exec/cpu's exported
// PromptToken and Uniform for many keys: the CUDA code is a line-by-line
// transliteration of mix and unit below.

// mix is the splitmix64 finalizer (pb_mix).
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// unit maps a hash to [−1, 1) from its top 24 bits (pb_unit).
func unit(h uint64) float32 { return float32(h>>40)/float32(1<<24)*2 - 1 }

// keyBase is the part of an element's key that does not depend on its row
// and column, for layer −1: mix(mix(mix(seed) ^ FNV-1a(tensor)) ^ uint64(−1)).
// The kernels finish it: mix(mix(base ^ row) ^ col).
func keyBase(seed int64, tensor string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(tensor))
	layer := int64(-1)
	k := mix(uint64(seed))
	k = mix(k ^ h.Sum64())
	return mix(k ^ uint64(layer))
}

// Tensor names of the keys the kernels finish (docs/numerics.md).
const (
	promptTensor    = "prompt"    // PromptToken
	syntheticTensor = "synthetic" // inputs of a model without embeddings
)

// promptToken is pb_prompt_token: PromptToken(seed, seq, pos, vocab) from
// base = keyBase(seed, "prompt").
func promptToken(base uint64, seq, pos, vocab int) int {
	return int(mix(mix(base^uint64(int64(seq)))^uint64(int64(pos))) % uint64(vocab))
}

// syntheticAt is element c of token id's input vector (pb_synthetic) from
// base = keyBase(seed, "synthetic").
func syntheticAt(base uint64, id, c int) float32 {
	return unit(mix(mix(base^uint64(int64(id))) ^ uint64(int64(c))))
}
