#!/bin/bash
# rounds of: calibrate's core-wait groups (15 repeats) then a tp2-dp2-tiny run (30 iterations)
set -u
D=${1:?dir}; N=${2:-8}
mkdir -p $D; cd $D
for k in $(seq 1 $N); do
  uptime >> log.txt
  CPUWAIT_PROBE_OUT=$D/probe-$k.json REPEATS=15 /tmp/cpuwait-probe/calib.test -test.run TestCPUWaitProbe > /dev/null 2>&1; echo "probe $k rc=$?" >> log.txt
  /tmp/cpuwait-probe/partbench run --nproc-per-node 4 --config test/tp2-dp2-tiny --backend cpu --iterations 30 --warmup 3 --quiet --output-dir run-$k > /dev/null 2>> err.txt; echo "run $k rc=$?" >> log.txt
done
uptime >> log.txt
