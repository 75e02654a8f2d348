set -x
B=/tmp/tp2pp2-base/before/partbench
uptime
$B calibrate --out cal.toml --format markdown --op-ranks 1,2,4,16 \
     --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
     --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
     --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > calibrate.md 2>&1
echo cal rc=$?
# RUNS traced runs after the calibration: 3 here (q1), 5 for q2 (q2/go.sh)
RUNS=${1:-3}
for i in $(seq 1 "$RUNS"); do uptime; $B run --nproc-per-node 4 --config test/tp2pp2-tiny --backend cpu --calibration cal.toml --iterations 30 --warmup 3 --per-rank --trace tr-$i.json --output-dir out-$i > run-$i.txt 2>&1; echo run $i rc=$?; done
uptime
