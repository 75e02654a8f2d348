// Package model is the definition of the model every interpreter runs: the
// architecture's features (defined by the model description, package arch:
// Llama-style and GPT-2-style families), the tensor names, one rank's Shard of the widths
// and the Megatron shard rules, the seeded weight generator keyed by (layer,
// tensor, element), token hashing, the norm epsilon, the RoPE base, the
// logits layout and the typed buffer identifiers of a Program.
//
// It must not know about ranks, groups, time or devices: partition says who
// holds which Shard, exec/cpu and exec/cuda run the arithmetic. A new
// architecture is a family registered in package arch; it touches this
// package only when it brings a feature (a norm, an activation, a weight
// layout) no family had before. It reads no checkpoint: checkpoint/shards
// reads a rank's shards from one, so model, partition and sim do not link the
// safetensors reader (purity_test.go).
package model
