#!/usr/bin/env python3
"""Each profile of each DIR (its *-1.toml, *-2.toml, *-3.toml, in name order) priced by BIN
(`model --dry-run`) for the six configs, against the median p50 of WORKDIR's runs (a run.sh pass):
one line per config and DIR, the TTFT and TPOT error (%) of every profile. With pooled.py's
profiles beside the pass's own, what a pricing of the same measurements with the core-wait
entries pooled would have read (docs/measurements/cpu-calibration.md, (twenty-eighth)).
Usage: profileprice.py BIN WORKDIR DIR..."""
import glob, os, sys
from pricing import CONFIGS, model, pass_runs
B, W, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
for name, cfg in CONFIGS.items():
    runs = pass_runs(W, name)
    if not runs:
        continue
    t0, p0, _ = runs
    for d in dirs:
        e = [model(B, cfg, p, cwd=W) for p in sorted(glob.glob(d + '/*-[123].toml'))]
        ts = ' '.join('%+.0f' % ((x[0] - t0) / t0 * 100) for x in e)
        ps = ' '.join('%+.0f' % ((x[1] - p0) / p0 * 100) for x in e)
        print(f'{name:17s} {os.path.basename(d):8s} TTFT {ts:30s} | TPOT {ps}')
