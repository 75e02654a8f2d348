// Package cpu is the float32 CPU compute backend: it holds one rank's shards
// of a seeded synthetic model (the same full model under every partitioning),
// its KV cache and per-micro-batch buffers, and runs the compute ops of a
// partition.Program with gonum BLAS. It is the reference the GPU backend and
// every partitioning are checked against (docs/numerics.md).
//
// It must not communicate: all-reduces, all-gathers and point-to-point
// transfers are the interpreter's, through an exec.Comm.
package cpu
