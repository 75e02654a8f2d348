#!/bin/bash
# before/after series: BIN_BEFORE BIN_AFTER ROUNDS; TP-2 copy of test/tp4-tiny at /tmp/tp2-tiny.toml
b=$1; a=$2; n=${3:-15}
for i in $(seq 1 $n); do
  if ((i % 2)); then order="$b $a"; else order="$a $b"; fi
  for c in "1 configs/test/single-tiny.toml" "2 /tmp/tp2-tiny.toml" "4 configs/test/tp4-tiny.toml" "4 configs/test/tp2pp2-tiny.toml"; do
    set -- $c
    for bin in $order; do
      l=$(cut -d' ' -f1 /proc/loadavg)
      v=$($bin run --backend cpu --nproc-per-node $1 --config $2 --iterations 30 --transport shm --output-dir "" --quiet 2>&1 | grep -E "^│ (TTFT|TPOT) " | awk -F'│' '{gsub(/ /,"",$6); printf "%s ", $6}')
      echo "$i $(basename $bin) $1 $(basename $2 .toml) $v$l"
    done
  done
done
