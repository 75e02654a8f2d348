// Package exec runs a partition.Program for real: allocate, warm up, measure,
// count, gather. It owns the Compute and Comm interfaces, the launch
// environment (mpirun, srun, torchrun variables) and the rendezvous.
//
// It must not know which backend it runs: backends (exec/cpu, exec/cuda, the
// TCP communicator, the NCCL binding) implement the interfaces below.
package exec
