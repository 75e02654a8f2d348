#!/bin/sh
# the small shapes again: numpy and partbench's MatMul alternated, 1 thread, four rounds, -count 5
for round in 1 2 3 4; do
  uptime
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 /tmp/blas/np.py | grep -v 512x
  PARTBENCH_BLAS_THREADS=1 /tmp/blas/cpu.test -test.run X -test.bench 'BenchmarkMatMulImpl/(80x128x64|4x256x64)/matmul' -test.benchtime 2000x -test.count 5 | grep GFLOP | sed "s/^/partbench threads=1 /"
done
