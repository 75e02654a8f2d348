#!/bin/bash
# series.sh TAG ROUNDS CONFIGS... : interleaved placements, pin only
tag=$1; n=$2; shift 2
for r in $(seq 1 $n); do
 for c in "$@"; do
  for pl in none 0,0,1,1 0,1,0,1; do
    echo "$(cut -d' ' -f1 /proc/loadavg) $(SAMPLE_MS=0 python3 place.py /tmp/dp2-bin/partbench $c o-$tag $pl)"
  done
 done
done
