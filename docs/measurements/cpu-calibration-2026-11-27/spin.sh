#!/bin/bash
cd /tmp/cal8/spin
: > log.txt
for i in 1 2 3; do
 for mode in default adaptive always; do
  uptime >> log.txt
  if [ $mode = default ]; then env=(); else env=(PARTBENCH_SHM_SPIN=$mode); fi
  env "${env[@]}" /tmp/cal8/gap/partbench run --nproc-per-node 16 --config test/layerwise16-tiny --backend cpu --calibration /tmp/cal8/p3/after-1.toml --iterations 10 --warmup 3 --quiet --output-dir out/$mode-$i > /dev/null 2>> err.txt
  echo "$mode $i rc=$?" >> log.txt
 done
done
uptime >> log.txt
