#!/bin/bash
# A second unpinned set, then every step of one run per policy dumped
# (PARTBENCH_BENCH_DUMP), one hold of the measuring lock:
#   flock /tmp/partbench-measure.lock run-set2.sh OUTDIR
out=$1; here=$(cd "$(dirname "$0")" && pwd)
cd /tmp/tcp10
uptime > $out/uptime-set2-start.txt
$here/ab.sh 14 $out/ab-unpinned-2.txt unpinned before:./main.test auto:./after.test adaptive:./after.test:PARTBENCH_TCP_POLL=adaptive always:./after.test:PARTBENCH_TCP_POLL=always
for v in off adaptive always; do
  for i in 1 2; do
    d=$out/dump-$v-$i; mkdir -p $d
    echo "$v $i load=$(cut -d' ' -f1 /proc/loadavg)" >> $out/dump-runs.txt
    PARTBENCH_BENCH_DUMP=$d PARTBENCH_TCP_POLL=$v ./after.test -test.run '^$' -test.bench 'StatefulStepProcess/tcp' -test.benchtime 3000x 2>&1 | grep '^Bench' >> $out/dump-runs.txt
  done
done
uptime > $out/uptime-set2-end.txt
