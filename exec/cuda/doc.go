// Package cuda is the GPU compute backend: one rank's shards of exec/cpu's
// seeded synthetic model in device memory, in the model's dtype (fp16 or
// bf16; fp32 for checks), its KV cache and per-micro-batch buffers, and the
// compute ops of a partition.Program as cublasGemmEx calls and NVRTC-built
// kernels on one stream, with CUDA events per op and optional CUDA graphs
// for decode steps. Buffers have exec/cpu's names and layouts, and Output
// returns float32 in exec/cpu's layout, so exec.Check holds the GPU against
// the CPU reference (CheckOptions).
//
// It must not communicate (a communicator takes its *Buffer values: NCCL on
// Stream, or host communicators through StagedComms), nor generate weights
// its own way: they come from exec/cpu. It loads the CUDA libraries at run
// time through cgo/cuda; without them New fails saying what was searched.
package cuda
