#!/bin/bash
# calibrate's wall time with run.sh's flags, main and the branch alternating.
cd /tmp/skew7/ctime
for i in 1 2; do
  for v in main after; do
    b=/tmp/skew7/main-bin/partbench; [ $v = after ] && b=/tmp/skew7/ctime/after/partbench
    u=$(uptime); s=$(date +%s.%N)
    $b calibrate --out $v-$i.toml --format markdown --op-ranks 1,2,4,16 \
     --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
     --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
     --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > $v-$i.md 2>&1
    e=$(date +%s.%N)
    echo "$v $i $(echo "$e - $s" | bc) s; before:$u; after: $(uptime)"
  done
done
