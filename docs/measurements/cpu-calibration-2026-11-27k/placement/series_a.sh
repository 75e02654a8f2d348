#!/bin/bash
# series_a.sh TAG ROUNDS: unbound tp2-dp2-tiny (partbench-new --bind-to none) sampled every 10 ms,
# 60 iterations, alternately with and without an idle-priority busy loop beside it
tag=$1; n=$2
for r in $(seq 1 $n); do
  for kind in none idle; do
    bg=
    [ $kind = idle ] && { chrt --idle 0 nice -n 19 python3 -c 'while 1: pass' & bg=$!; }
    echo "$kind $(cut -d' ' -f1 /proc/loadavg) $(ITERS=60 SAMPLE_MS=10 python3 place.py /tmp/dp2-bin/partbench-new test/tp2-dp2-tiny o-$tag none none)"
    [ -n "$bg" ] && kill $bg
  done
done
