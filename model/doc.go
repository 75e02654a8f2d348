// Package model is the definition of the model every interpreter runs: the
// architecture (today Llama-style: RMSNorm, rotary positions, gated SiLU MLP,
// grouped-query attention), the tensor names, one rank's Shard of the widths
// and the Megatron shard rules, the seeded weight generator keyed by (layer,
// tensor, element), token hashing, the norm epsilon, the RoPE base, the
// logits layout and the typed buffer identifiers of a Program.
//
// It must not know about ranks, groups, time or devices: partition says who
// holds which Shard, exec/cpu and exec/cuda run the arithmetic. A new
// architecture (GPT-2-style LayerNorm, biases, learned positions, an encoder)
// is an addition here, in partition's Program and in each backend's kernels.
package model
