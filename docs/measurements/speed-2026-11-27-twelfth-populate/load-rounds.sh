#!/bin/bash
# One sharded load per process (BenchmarkShardedLoadCold, -test.benchtime 1x:
# TP 1, 2 and 8, one load each), the two binaries alternating which goes
# first, ROUNDS rounds, each process under the measuring lock; the 1-minute
# load as each takes the lock (load-rounds-1.txt, the first run: as each
# queued for it). Usage: load-rounds.sh ROUNDS OUT [A B] (binaries
# /tmp/populate-bin/A.test and B.test; before and after unless named)
set -u
rounds=$1 out=$2 a=${3:-before} b=${4:-after}
export PARTBENCH_SHARDS_BENCH_DIR=/tmp/populate-bench PARTBENCH_SHARDS_BENCH_MB=2048
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="$a $b"; else order="$b $a"; fi
  for bin in $order; do
    # the round's line is written once the lock is held, with the load then
    flock /tmp/partbench-measure.lock sh -c "echo === round $r $bin \$(date -u +%H:%M:%S) loadavg \$(cut -d' ' -f1-3 /proc/loadavg); \
      exec /tmp/populate-bin/$bin.test -test.run XXX -test.bench ShardedLoadCold -test.benchtime 1x" >>"$out" 2>&1
  done
done
echo "=== end $(date -u +%H:%M:%S) loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
