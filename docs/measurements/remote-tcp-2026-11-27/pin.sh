#!/bin/bash
# Placement experiment: the same binary unpinned and pinned to one vCPU.
cd /tmp/tcp9
for r in 1 2 3 4 5; do
  for mode in free cpu0 cpu1; do
    pre=""; [ $mode = cpu0 ] && pre="taskset -c 0"; [ $mode = cpu1 ] && pre="taskset -c 1"
    load=$(cut -d' ' -f1 /proc/loadavg)
    $pre ./new.test -test.run '^$' -test.bench 'StatefulStepProcess/tcp' -test.benchtime 3000x 2>&1 | grep '^BenchmarkStatefulStepProcess' | sed "s|^|$r $mode load=$load $(date -u +%H:%M:%S) |" >> $1
  done
done
