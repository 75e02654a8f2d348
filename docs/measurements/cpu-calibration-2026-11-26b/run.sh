#!/bin/bash
# CPU calibration and the six configs, three runs each (docs/measurements/cpu-calibration.md's set)
set -u
B=/tmp/cpucal/partbench
cd /tmp/cpucal
uptime > log.txt
date -u >> log.txt
$B calibrate --out cpu.toml --format markdown \
   --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
   --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
   --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > calibrate.md 2>&1
echo "calibrate rc=$?" >> log.txt
uptime >> log.txt
for i in 1 2 3; do
  for c in "test/single-tiny 1 30" "tp2-tiny.toml 2 30" "pp2-tiny.toml 2 30" "test/tp2pp2-tiny 4 30" \
           "test/tp2-dp2-tiny 4 30" "test/layerwise16-tiny 16 10"; do
    set -- $c; uptime >> log.txt
    $B run --nproc-per-node $2 --config $1 --backend cpu --calibration cpu.toml \
        --iterations $3 --warmup 3 --quiet --output-dir out/$(basename $1 .toml)-$i > /dev/null 2>> err.txt
    echo "$1 $i rc=$?" >> log.txt
  done
done
date -u >> log.txt
