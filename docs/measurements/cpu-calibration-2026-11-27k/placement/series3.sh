#!/bin/bash
# series3.sh TAG ROUNDS CONFIGS... : partbench-new --bind-to auto vs none, alternating order
tag=$1; n=$2; shift 2
for r in $(seq 1 $n); do
 for c in "$@"; do
  order="auto none"; [ $((r%2)) = 0 ] && order="none auto"
  for b in $order; do
    /tmp/dp2-bin/partbench-new run --nproc-per-node 4 --config $c --backend cpu --iterations 30 --warmup 3 --quiet --bind-to $b --output-dir o-$tag >/dev/null 2>&1
    echo "$r $(cut -d' ' -f1 /proc/loadavg) $(basename $c) $b $(python3 metric.py o-$tag)"
  done
 done
done
