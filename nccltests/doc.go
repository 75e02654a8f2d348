// Package nccltests speaks nccl-tests' command-line dialect for partbench
// collectives: the size progression of -b/-e/-f/-i, the reduction ops of
// -o and the root column, exactly as all_reduce_perf computes them.
//
// It must not model or print anything: sim models, report prints.
package nccltests
