#!/bin/bash
# docs/measurements/cpu-calibration.md, (thirtieth) 5. Usage: go.sh PARTBENCH WORKDIR
# tp2-tiny with the MLP's width 128, 512 and 2048 (more compute between the collectives), three
# runs each, round-robin; an.py WORKDIR tabulates each run's link probe against its decode calls.
set -u
B=$1 W=$2
D=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W" && cd "$W"
for r in 1 2 3; do for f in 128 512 2048; do
  "$B" run --nproc-per-node 2 --config "$D"/tp2-ffn$f.toml --backend cpu --iterations 30 --warmup 3 --quiet --output-dir out/f$f-$r > /dev/null 2>&1
  echo "f$f $r rc=$?"
done; done
