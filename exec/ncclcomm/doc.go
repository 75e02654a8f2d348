// Package ncclcomm is the data plane of partbench's GPU backend: an
// exec.Comm over NCCL that moves an exec/cuda Compute's device buffers,
// queues every call on the rank's stream with the rank's CUDA context
// current, and counts it through the nccl binding under the commcount
// definitions, so a run's counts hold against the Program's exactly.
//
// It must not compute, decide what a rank sends, or decide when a run is
// over: the Program says what moves, the rendezvous carries the NCCL unique
// ids and reports lost ranks, and the run loop cancels ctx.
package ncclcomm
