#!/bin/bash
# CPU calibration with the core and receive waits, and the six configs three
# times each, "after" (the profile as calibrated) and "before" (the same
# profile without its core_wait and recv_wait entries), alternating, so both
# models meet the same runs' load. Usage: run.sh WORKDIR (built binary at WORKDIR/partbench; this
# folder's tp2-tiny.toml and pp2-tiny.toml copied there).
set -u
W=${1:-/tmp/cpucal3}
B=$W/partbench
cd "$W"
uptime > log.txt
date -u >> log.txt
$B calibrate --out cpu.toml --format markdown --op-ranks 1,2,4,16 \
   --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
   --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
   --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > calibrate.md 2>&1
echo "calibrate rc=$?" >> log.txt
uptime >> log.txt
# "before": the same profile without its core_wait and recv_wait op times
python3 - <<'PY'
blocks = open("cpu.toml").read().split("\n[[op_time]]\n")
keep = [blocks[0]] + [b for b in blocks[1:] if 'kind = "core_wait"' not in b and 'kind = "recv_wait"' not in b]
open("cpu-nowait.toml", "w").write("\n[[op_time]]\n".join(keep))
PY
for i in 1 2 3; do
  for c in "test/single-tiny 1 30" "tp2-tiny.toml 2 30" "pp2-tiny.toml 2 30" "test/tp2pp2-tiny 4 30" \
           "test/tp2-dp2-tiny 4 30" "test/layerwise16-tiny 16 10"; do
    set -- $c
    for v in after before; do
      p=cpu.toml; [ $v = before ] && p=cpu-nowait.toml
      uptime >> log.txt
      $B run --nproc-per-node $2 --config $1 --backend cpu --calibration $p \
          --iterations $3 --warmup 3 --quiet --output-dir out/$v/$(basename $1 .toml)-$i > /dev/null 2>> err.txt
      echo "$v $1 $i rc=$?" >> log.txt
    done
  done
done
uptime >> log.txt
date -u >> log.txt
