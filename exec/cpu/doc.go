// Package cpu is the float32 CPU compute backend: it holds one rank's shards
// of the model package's seeded synthetic model (the same full model under
// every partitioning), its KV cache and per-micro-batch buffers (exec.Frame),
// and provides the kernels of a partition.Program's compute ops, with gonum
// BLAS. It is the reference the GPU backend and
// every partitioning are checked against (docs/numerics.md).
//
// It must not communicate: all-reduces, all-gathers and point-to-point
// transfers are the interpreter's, through an exec.Comm.
package cpu
