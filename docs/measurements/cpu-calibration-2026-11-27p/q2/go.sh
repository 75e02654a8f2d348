set -x
B=/tmp/tp2pp2-base/before/partbench
uptime
$B calibrate --out cal.toml --format markdown --op-ranks 1,2,4,16 \
     --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
     --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
     --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > calibrate.md 2>&1
echo cal rc=$?
for i in 1 2 3 4 5; do uptime; $B run --nproc-per-node 4 --config test/tp2pp2-tiny --backend cpu --calibration cal.toml --iterations 30 --warmup 3 --per-rank --trace tr-$i.json --output-dir out-$i > run-$i.txt 2>&1; echo run $i rc=$?; done
uptime
/tmp/tp2pp2-base/after/partbench model --dry-run --config test/tp2pp2-tiny --calibration cal.toml --trace fix.json > /dev/null 2>&1
/tmp/tp2pp2-base/before/partbench model --dry-run --config test/tp2pp2-tiny --calibration cal.toml --trace main.json > /dev/null 2>&1
