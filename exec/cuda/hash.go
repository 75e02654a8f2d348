package cuda

import "github.com/partbench/partbench/model"

// The kernels pb_prompt_tokens, pb_synthetic and pb_teacher compute the
// model package's PromptToken and synthetic inputs on the GPU, so a
// captured decode step needs no host data: the host passes the part of
// each key that does not depend on the element (keyBase) and the CUDA code
// finishes it with a line-by-line transliteration of model.KeyAt and
// model.Unit (pb_mix, pb_unit). The functions below are the Go statement of
// what the kernels compute, held by the tests against model.PromptToken and
// model.Uniform for many keys.

// keyBase is model.KeyBase of tensor in layer −1.
func keyBase(seed int64, tensor string) uint64 { return model.KeyBase(seed, -1, tensor) }

// Tensor names of the keys the kernels finish (docs/numerics.md).
const (
	promptTensor    = model.Prompt         // PromptToken
	syntheticTensor = model.SyntheticInput // inputs of a model without embeddings
)

// promptToken is pb_prompt_token: PromptToken(seed, seq, pos, vocab) from
// base = keyBase(seed, "prompt").
func promptToken(base uint64, seq, pos, vocab int) int {
	return int(model.KeyAt(base, seq, pos) % uint64(vocab))
}

// syntheticAt is element c of token id's input vector (pb_synthetic) from
// base = keyBase(seed, "synthetic").
func syntheticAt(base uint64, id, c int) float32 {
	return model.Unit(model.KeyAt(base, id, c))
}
