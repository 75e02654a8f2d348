#!/bin/bash
# BenchmarkDryRun of two sim test binaries (go test -c ./sim), alternated in
# one script: four rounds, CPU time per op (cpu-ns/op), allocations, load.
# Usage: bench.sh BASE.test NEW.test
BASE=$1; NEW=$2
for round in 1 2 3 4; do
  for side in base new; do
    bin=$BASE; [ $side = new ] && bin=$NEW
    for c in '16$:200x' '100000:20x'; do
      chrt --idle 0 nice -n 19 $bin -test.run '^$' -test.bench "DryRun/gpus=${c%%:*}" -test.benchtime ${c##*:} -test.cpu 1 -test.benchmem |
        awk -v r=$round -v s=$side '/^Benchmark/ {printf "%s %s %s %.3f %s %s\n", r, s, $1, $5/1e6, $7, $9}'
    done
  done
  echo "load $(cut -d' ' -f1 /proc/loadavg) $(date -u +%H:%M:%S)"
done
