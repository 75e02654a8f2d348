#!/bin/bash
# The neighbour's cost, longer runs (raw TCP only, 20,000 steps): one hold
# of the measuring lock:  flock /tmp/partbench-measure.lock run-neighbour.sh OUTDIR
out=$1; here=$(cd "$(dirname "$0")" && pwd)
cd /tmp/tcp10
uptime > $out/uptime-nb-start.txt
# The neighbour alone, 2 s, three times.
for i in 1 2 3; do ./neighbour > $out/nb-alone-$i.txt & p=$!; sleep 2; kill $p; wait $p; done
BENCH='StatefulStepProcess/tcp' BENCHTIME=20000x $here/ab.sh 8 $out/ab-neighbour-long.txt neighbour before:./main.test adaptive:./after.test:PARTBENCH_TCP_POLL=adaptive always:./after.test:PARTBENCH_TCP_POLL=always
uptime > $out/uptime-nb-end.txt
