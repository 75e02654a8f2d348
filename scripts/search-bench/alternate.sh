#!/bin/bash
# Alternates two `go test -c ./sim` binaries, $BASE (before; sim-base in script*.txt) and
# $FINAL (after; sim-final), each run once per round: eight rounds of
# BenchmarkSearchScale (16, 1,024, 4,096, 16,384 GPUs), BenchmarkSearchFitScale and BenchmarkSearchQuick,
# -benchtime 300x -cpu 1 -benchmem, under chrt --idle 0 nice -n 19. Prints: round binary benchmark cpu-ns/op B/op allocs/op load1.
cd "$(dirname "$0")/../../sim"
for r in 1 2 3 4 5 6 7 8; do
  for bin in ${BASE:?test binary of the before commit} ${FINAL:?test binary of the after commit}; do
    chrt --idle 0 nice -n 19 $bin -test.run '^$' -test.bench 'Search(Scale|FitScale|Quick)$|Search(Scale|FitScale)/' -test.benchtime 300x -test.cpu 1 -test.benchmem 2>&1 | grep '^Bench' |
      awk -v r=$r -v b=$(basename $bin .test) -v l="$(cut -d' ' -f1 /proc/loadavg)" '{for(i=1;i<=NF;i++){if($i=="cpu-ns/op")c=$(i-1); if($i=="B/op")m=$(i-1); if($i=="allocs/op")a=$(i-1)}; print r, b, $1, c, m, a, l}'
  done
done
