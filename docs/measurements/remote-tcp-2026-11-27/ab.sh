#!/bin/bash
# Alternates main's (5953dee) and this branch's compiled test binaries, one
# process per run: BenchmarkStatefulStepProcess, 3000 steps per transport.
# Usage: ab.sh ROUNDS OUTFILE NEWBIN
rounds=$1; out=$2; newbin=$3
cd /tmp/tcp9
for r in $(seq 1 $rounds); do
  for b in before after; do
    bin=./main.test; [ $b = after ] && bin=$newbin
    load=$(cut -d' ' -f1 /proc/loadavg)
    $bin -test.run '^$' -test.bench StatefulStepProcess -test.benchtime 3000x 2>&1 | grep '^BenchmarkStatefulStepProcess' | sed "s|^|$r $b load=$load $(date -u +%H:%M:%S) |" >> $out
  done
done
