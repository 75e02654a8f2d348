#!/bin/bash
# The 100,000-GPU dry run as a whole process, two partbench binaries in turn,
# pair by pair: user + system CPU seconds and peak RSS (/usr/bin/time).
# Usage: process.sh BASE NEW CONFIG PAIRS
BASE=$1; NEW=$2; CFG=$3; PAIRS=${4:-5}
for fmt in table json; do
  for i in $(seq $PAIRS); do
    for side in base new; do
      bin=$BASE; [ $side = new ] && bin=$NEW
      /usr/bin/time -f "$fmt $i $side %U %S %M" chrt --idle 0 nice -n 19 $bin model --dry-run --config $CFG --format $fmt > /dev/null
    done
  done
  echo "load $(cut -d' ' -f1 /proc/loadavg) $(date -u +%H:%M:%S)"
done
