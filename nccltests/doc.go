// Package nccltests speaks nccl-tests' dialect for partbench collectives:
// the size progression of -b/-e/-f/-i, the reduction ops of -o and the root
// column, exactly as all_reduce_perf computes them, and reads the text
// output nccl-tests prints (ParseOutput) so a real run can be held against
// the model.
//
// It must not model or print anything: sim models, report prints.
package nccltests
