// Package hostemu runs partbench's CUDA kernels on CPU threads: it compiles
// the very same .cu text NVRTC compiles (exec/cuda/kernels) with the host's
// C++ compiler behind a prelude (prelude.h) that gives every CUDA thread a
// real thread, __syncthreads and warp operations barrier semantics, the
// 16-bit types the device's rounding, and pb_tc.cuh's mma.sync, ldmatrix
// and cp.async their documented PTX semantics; then launches kernels on
// host buffers. It proves kernels' numerics against references without a
// GPU (docs/numerics.md). It must not stand in for a backend: it runs
// test shapes, slowly.
package hostemu
