#!/bin/bash
# series2.sh TAG ROUNDS LOADKIND CONFIGS... : like series.sh, with a background busy loop (idle|normal|none)
tag=$1; n=$2; kind=$3; shift 3
case $kind in
 idle) chrt --idle 0 nice -n 19 python3 -c 'while 1: pass' & bg=$! ;;
 normal) python3 -c 'while 1: pass' & bg=$! ;;
 *) bg= ;;
esac
for r in $(seq 1 $n); do
 for c in "$@"; do
  for pl in none 0,0,1,1; do
    echo "$kind $(cut -d' ' -f1 /proc/loadavg) $(SAMPLE_MS=0 python3 place.py /tmp/dp2-bin/partbench $c o-$tag $pl)"
  done
 done
done
[ -n "$bg" ] && kill $bg
