#!/bin/bash
# Six unpinned runs of one binary with every step's and floor round trip's
# time dumped (PARTBENCH_BENCH_DUMP), for where the slow ones fall.
cd /tmp/tcp9
for r in 1 2 3 4 5 6; do
  mkdir -p dump/$r
  load=$(cut -d' ' -f1 /proc/loadavg)
  PARTBENCH_BENCH_DUMP=dump/$r ./after2.test -test.run '^$' -test.bench StatefulStepProcess -test.benchtime 3000x 2>&1 | grep '^BenchmarkStatefulStepProcess' | sed "s|^|$r load=$load |" >> dump/runs.txt
done
