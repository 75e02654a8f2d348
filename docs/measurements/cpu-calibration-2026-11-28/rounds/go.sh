#!/bin/bash
# docs/measurements/cpu-calibration.md, (thirtieth). Usage: go.sh WORKDIR (WORKDIR/before/partbench built).
# One `calibrate --rounds 3` (the agreement pass's flags), then three rounds of the six configs'
# runs priced from the merged profile; before-K.toml name the rounds for mergeprice.py. Last, a
# default `calibrate --rounds 3`, timed.
set -u
W=$1
S=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)/scripts/calibration-agreement
cd $W
cp "$S"/tp2-tiny.toml "$S"/pp2-tiny.toml .
: > log.txt
uptime >> log.txt; date -u >> log.txt
/usr/bin/time -f "calibrate --rounds 3: %e s" -a -o log.txt \
  $W/before/partbench calibrate --out before.toml --rounds 3 --format markdown --op-ranks 1,2,4,16 \
     --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
     --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
     --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > calibrate-before.md 2>&1
echo "calibrate before rc=$?" >> log.txt
for r in 1 2 3; do ln -sf before.round-$r.toml before-$r.toml; ln -sf before.round-$r.toml after-$r.toml; done
for r in 1 2 3; do
  for c in "test/single-tiny 1 30" "tp2-tiny.toml 2 30" "pp2-tiny.toml 2 30" "test/tp2pp2-tiny 4 30" \
           "test/tp2-dp2-tiny 4 30" "test/layerwise16-tiny 16 10"; do
    set -- $c
    uptime >> log.txt
    $W/before/partbench run --nproc-per-node $2 --config $1 --backend cpu --calibration before.toml \
        --iterations $3 --warmup 3 --quiet --output-dir out/before/$(basename $1 .toml)-$r > /dev/null 2>> err.txt
    echo "before $1 $r rc=$?" >> log.txt
  done
done
uptime >> log.txt; date -u >> log.txt
/usr/bin/time -f "default calibrate --rounds 3: %e s" -a -o log.txt \
  $W/before/partbench calibrate --out default.toml --rounds 3 > calibrate-default.txt 2>&1
echo "calibrate default rc=$?" >> log.txt
date -u >> log.txt
