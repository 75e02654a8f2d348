#!/bin/bash
# Three rounds; each calibrates the machine once with partbench after (WORKDIR/after/partbench:
# this branch, whose profile adds the op times taken in turns to main's), then runs the six
# configs with after and before (WORKDIR/before/partbench: main 025fa04), alternating, both
# pricing them from that one profile (main reads the turns:<kind> entries as kinds no op has),
# so the two models differ only in how they price and meet the same runs' load.
# Usage: run-shared.sh WORKDIR (this folder's tp2-tiny.toml and pp2-tiny.toml copied there).
set -u
W=${1:-/tmp/calib8}
cd "$W"
: > log.txt
for r in 1 2 3; do
  uptime >> log.txt; date -u >> log.txt
  $W/after/partbench calibrate --out after-$r.toml --format markdown --op-ranks 1,2,4,16 \
     --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
     --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
     --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > calibrate-after-$r.md 2>&1
  echo "calibrate after $r rc=$?" >> log.txt
  for c in "test/single-tiny 1 30" "tp2-tiny.toml 2 30" "pp2-tiny.toml 2 30" "test/tp2pp2-tiny 4 30" \
           "test/tp2-dp2-tiny 4 30" "test/layerwise16-tiny 16 10"; do
    set -- $c
    for v in after before; do
      uptime >> log.txt
      $W/$v/partbench run --nproc-per-node $2 --config $1 --backend cpu --calibration after-$r.toml \
          --iterations $3 --warmup 3 --quiet --output-dir out/$v/$(basename $1 .toml)-$r > /dev/null 2>> err.txt
      echo "$v $1 $r rc=$?" >> log.txt
    done
  done
done
uptime >> log.txt
date -u >> log.txt
