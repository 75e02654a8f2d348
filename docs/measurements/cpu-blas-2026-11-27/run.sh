#!/bin/sh
# alternate numpy and partbench's MatMul at 1 and 2 threads, two rounds
for round in 1 2; do
  for t in 1 2; do
    uptime
    OPENBLAS_NUM_THREADS=$t /usr/bin/python3 /tmp/blas/np.py
    PARTBENCH_BLAS_THREADS=$t /tmp/blas/cpu.test -test.run X -test.bench 'BenchmarkMatMulImpl/.*/matmul' -test.benchtime 200x -test.count 3 | grep GFLOP | sed "s/^/partbench threads=$t /"
  done
done
