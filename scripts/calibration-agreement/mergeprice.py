#!/usr/bin/env python3
"""For each run.sh pass WORKDIR given: each variant's three profiles merged by
`MERGEBIN calibrate merge` (and all six where both variants are one binary, SAME=1), and every
profile, the merged ones beside the three it pools, priced by the variant's binary
(`model --dry-run`) against the median p50 of the pass's runs: per config the TTFT, TPOT and TPS
error (%) and, per profile, the cells (TTFT and TPOT of the six configs; then with TPS) within 10 %
(docs/measurements/cpu-calibration.md, (twenty-ninth)). Usage: mergeprice.py MERGEBIN WORKDIR..."""
import os, subprocess, sys
from pricing import CONFIGS, model_tps, pass_runs, pass_tps
mb, passes = sys.argv[1], sys.argv[2:]
same = os.environ.get('SAME') == '1'
for W in passes:
    runs = {n: pass_runs(W, n) for n in CONFIGS}
    tps = {n: pass_tps(W, n) for n in CONFIGS}
    sets = [(v, v, [f'{W}/{v}-{r}.toml' for r in (1, 2, 3)]) for v in ('before', 'after')]
    if same:
        sets.append(('all', 'after', sets[0][2] + sets[1][2]))
    for name, v, profs in sets:
        merged = f'{W}/merged-{name}.toml'
        subprocess.run([mb, 'calibrate', 'merge', '--output', merged, *profs], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cols = ([] if name == 'all' else profs) + [merged]
        within = [0] * len(cols)
        within3 = [0] * len(cols)
        print(f'# {W} {name}: ' + ' '.join(os.path.basename(p) for p in cols))
        for n, cfg in CONFIGS.items():
            t0, p0, _ = runs[n]
            es = [model_tps(f'{W}/{v}/partbench', cfg, p, cwd=W) for p in cols]
            te = [(e[0] - t0) / t0 * 100 for e in es]
            pe = [(e[1] - p0) / p0 * 100 for e in es]
            se = [(e[2] - tps[n]) / tps[n] * 100 for e in es]
            for i in range(len(cols)):
                within[i] += (abs(te[i]) <= 10) + (abs(pe[i]) <= 10)
                within3[i] += (abs(te[i]) <= 10) + (abs(pe[i]) <= 10) + (abs(se[i]) <= 10)
            print(f'{n:17s} TTFT ' + ' '.join('%+4.0f' % x for x in te).ljust(22) +
                  '| TPOT ' + ' '.join('%+4.0f' % x for x in pe).ljust(22) + '| TPS ' + ' '.join('%+4.0f' % x for x in se))
        print('within 10 % (of 12): ' + ' '.join(str(w) for w in within))
        print('with TPS (of 18): ' + ' '.join(str(w) for w in within3))
