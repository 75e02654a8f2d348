package exec

// StateIO is a Compute whose model state can be set and read from outside
// the Program: a stateless remote server (partbench remote, naive and kv
// modes) installs the weights and the KV cache a request carries, runs the
// Program, and returns the updated cache. Byte layouts are those of
// partition.RemotePayloadOf, elements little-endian in the plan's dtype:
//   - a weight shard is row-major [k][n] (model.Tensor's layout);
//   - a layer's KV cache of tokens positions is [sequence][position][k | v],
//     k and v each KVWidth elements of the rank's shard.
type StateIO interface {
	// ImportWeight replaces the shard (layer, name) with data; its size must
	// be the shard's exactly.
	ImportWeight(layer int, name string, data []byte) error
	// ImportKV replaces positions [0, tokens) of every sequence of layer's
	// cache with src and clears the positions after them.
	ImportKV(layer, tokens int, src []byte) error
	// ExportKV writes positions [0, tokens) of every sequence of layer's cache
	// to dst.
	ExportKV(layer, tokens int, dst []byte) error
	// SetPrompt makes the Input op read prompt positions from tokens,
	// [global sequence][prompt position], instead of the seeded prompt.
	SetPrompt(tokens []int32) error
	// WriteTokens sets the token ids micro-batch mb's next decode pass reads
	// (one per sequence of the micro-batch).
	WriteTokens(mb int, ids []int32) error
	// Sampled is the argmax token of each sequence of micro-batch mb at its
	// last pass (nil without an LM head).
	Sampled(mb int) []int
	// Output is micro-batch mb's logits [seqs][vocab] of its last pass.
	Output(mb int) []float32
}
