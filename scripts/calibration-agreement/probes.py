#!/usr/bin/env python3
"""Each run's link probes in a run.sh pass (docs/measurements/cpu-calibration.md, (thirtieth)):
per config, round and variant, every group's probed collective (exec.LinkProbe, from the group's
lowest rank) — the median call back to back after the measured iterations — beside that rank's
decode calls of the kind in the run (time per call) and the modeled call (the op check's decode
row over the rank's calls per step). Usage: probes.py WORKDIR"""
import glob
import json
import os
import statistics
import sys

W = sys.argv[1]
print('| config | round | variant | collective | probe (µs) | in the run (µs) | modeled (µs) | probe / modeled |')
print('|---|---|---|---|---|---|---|---|')
for f in sorted(glob.glob(W + '/out/*/*-[0-9]/results.json')):
    variant = f.split('/')[-3]
    name, rnd = os.path.basename(os.path.dirname(f)).rsplit('-', 1)
    d = json.load(open(f))
    rows = {(r['phase'], r['kind']): r for r in d.get('op_check') or []}
    seen = set()
    for res in d['measurement']['ranks']:
        for p in res.get('link_probes') or []:
            key = (p['kind'], tuple(p['ranks']))
            if key in seen:
                continue
            seen.add(key)
            its = res['phase_busy_s']['decode'].get(p['kind'], [])
            calls = res['decode_counts']['calls'].get(p['kind'], 0)
            steps = len(res['step_end_s'][0]) if res.get('step_end_s') else 0
            inrun = modeled = None
            if its and calls:
                per_it = calls / len(its)
                inrun = statistics.median(its) / per_it
                row = rows.get(('decode', p['kind']))
                if row and steps:
                    modeled = row['modeled_s'] / (per_it / steps)
            fmt = lambda x: '%.3g' % (x * 1e6) if x else '—'
            ratio = '%.2f' % (p['median_s'] / modeled) if modeled else '—'
            print(f"| {name} | {rnd} | {variant} | {p['kind']} {p['bytes']} B over {','.join(map(str, p['ranks']))} | "
                  f"{fmt(p['median_s'])} | {fmt(inrun)} | {fmt(modeled)} | {ratio} |")
