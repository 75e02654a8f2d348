#!/bin/bash
# tp2-tiny runs (2 ranks bound, one CPU each) alternating GOMAXPROCS unset / =1 in the ranks'
# environment: each run's decode all-reduce time per step says its state.
cd /tmp/skew7/gmp
B=/tmp/skew7/after-bin/partbench
for i in $(seq 1 10); do
  for v in default one; do
    u=$(uptime | sed 's/.*load average: //')
    if [ $v = one ]; then export GOMAXPROCS=1; else unset GOMAXPROCS; fi
    $B run --nproc-per-node 2 --config tp2-tiny.toml --backend cpu --calibration /tmp/skew7/p4/after-1.toml \
      --iterations 30 --warmup 3 --quiet --output-dir out/$v-$i > /dev/null 2>>err.txt
    unset GOMAXPROCS
    python3 - out/$v-$i/results.json "$v $i $(date -u +%T) load $u" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = {(x['phase'], x['kind']): x for x in d['op_check']}
print(sys.argv[2], 'TPOT p50 %.4f ms' % (d['measurement']['tpot_s']['p50']*1e3), 'decode all_reduce %.1f µs/step' % (r[('decode','all_reduce')]['measured_s']*1e6))
PY
  done
done
