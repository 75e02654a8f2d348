#!/bin/bash
# BenchmarkRankLoadShardedCold (pairs as in speed.md sections 34 and 36, 5
# counted a size after a warm-up pair), one process per run under the
# measuring lock, the binaries in the order given. Usage: pairs-runs.sh
# OUTDIR before after after before …  (each run to OUTDIR/pairs-BIN-N.txt)
set -u
out=$1; shift
export PARTBENCH_SHARDS_BENCH_DIR=/tmp/populate-bench PARTBENCH_SHARDS_BENCH_MB=2048
n=0
for bin in "$@"; do
  n=$((n+1)); f=$out/pairs-$bin-$n.txt
  echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >"$f"
  flock /tmp/partbench-measure.lock sh -c "echo locked \$(date -u +%H:%M:%S) load \$(cut -d' ' -f1 /proc/loadavg); exec /tmp/populate-bin/$bin.test -test.run XXX -test.bench RankLoadShardedCold -test.benchtime 5x -test.v" >>"$f" 2>&1
  echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >>"$f"
done
