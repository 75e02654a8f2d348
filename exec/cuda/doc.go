// Package cuda is the GPU compute backend: one rank's shards of the model
// package's seeded synthetic model in device memory, in the model's dtype
// (fp16 or bf16; fp32 for checks), its KV cache and per-micro-batch buffers
// (exec.Frame), and the kernels of a partition.Program's compute ops as
// cublasGemmEx calls and NVRTC-built kernels on one stream, with CUDA events
// per op and optional CUDA graphs for decode steps. Every shape comes from
// the op; Output returns float32 in the reference's layout, so exec.Check
// holds the GPU against exec/cpu (CheckOptions, given the reference).
//
// It must not communicate (a communicator takes its *Buffer values: NCCL on
// Stream, or host communicators through StagedComms), import another
// backend, or generate weights its own way: they come from package model.
// It loads the CUDA libraries at run time through cgo/cuda; without them
// New fails saying what was searched.
package cuda
