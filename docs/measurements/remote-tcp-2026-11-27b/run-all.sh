#!/bin/bash
# The ninth session's three sets, one hold of the measuring lock:
#   flock /tmp/partbench-measure.lock run-all.sh OUTDIR
# in /tmp/tcp10 with main.test (baca2fb), after.test (this branch) and
# neighbour (gcc -O2 -o neighbour neighbour.c).
out=$1; here=$(cd "$(dirname "$0")" && pwd)
cd /tmp/tcp10
uptime > $out/uptime-start.txt
$here/ab.sh 14 $out/ab-unpinned.txt unpinned before:./main.test auto:./after.test adaptive:./after.test:PARTBENCH_TCP_POLL=adaptive always:./after.test:PARTBENCH_TCP_POLL=always
$here/ab.sh 12 $out/ab-pinned.txt pinned before:./main.test auto:./after.test adaptive:./after.test:PARTBENCH_TCP_POLL=adaptive
$here/ab.sh 12 $out/ab-neighbour.txt neighbour before:./main.test auto:./after.test adaptive:./after.test:PARTBENCH_TCP_POLL=adaptive always:./after.test:PARTBENCH_TCP_POLL=always
uptime > $out/uptime-end.txt
