#!/bin/bash
# Alternates main's (5953dee) test binary and another, each run pinned to one
# vCPU (client and both children on it): BenchmarkStatefulStepProcess.
# Usage: abpin.sh ROUNDS OUTFILE NEWBIN [BENCH]
rounds=$1; out=$2; newbin=$3; bench=${4:-StatefulStepProcess}
cd /tmp/tcp9
for r in $(seq 1 $rounds); do
  cpu=$((r % 2))
  for b in before after; do
    bin=./main.test; [ $b = after ] && bin=$newbin
    load=$(cut -d' ' -f1 /proc/loadavg)
    taskset -c $cpu $bin -test.run '^$' -test.bench "$bench" -test.benchtime 3000x 2>&1 | grep '^BenchmarkStatefulStepProcess' | sed "s|^|$r $b load=$load $(date -u +%H:%M:%S) cpu$cpu |" >> $out
  done
done
