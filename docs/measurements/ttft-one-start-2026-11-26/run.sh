#!/bin/bash
# TTFT from one start: pp2-tiny (2 ranks) and layerwise16-tiny (16 ranks) on
# the CPU backend, five runs each of "before" (each rank timed its iteration
# from its own start) and "after" (from the earliest rank's start on rank 0's
# clock), alternating so both meet the same load. Usage: run.sh WORKDIR, with
# WORKDIR/partbench-before and WORKDIR/partbench-after built and
# ../cpu-calibration-2026-11-26c/pp2-tiny.toml copied there. No calibration:
# only the measured side is compared.
set -u
W=${1:-/tmp/t0meas}
cd "$W"
uptime > log.txt
date -u >> log.txt
for i in 1 2 3 4 5; do
  for c in "pp2-tiny.toml 2 30" "test/layerwise16-tiny 16 10"; do
    set -- $c
    for v in before after; do
      echo "$(date -u +%T) $(uptime | sed 's/.*load/load/')" >> log.txt
      ./partbench-$v run --nproc-per-node $2 --config $1 --backend cpu \
          --iterations $3 --warmup 3 --quiet --output-dir out/$v/$(basename $1 .toml)-$i > /dev/null 2>> err.txt
      echo "$v $1 $i rc=$?" >> log.txt
    done
  done
done
uptime >> log.txt
date -u >> log.txt
