"""(thirtieth) 5.: per run of go.sh and rank, the decode compute a step, the all_reduce calls a step,
the link probe (exec.LinkProbe) and the run's own decode call, and their difference. Usage: an.py WORKDIR"""
import json, glob, statistics, os, sys
print('| config | run | TPOT (µs) | compute a step (µs) | all_reduce calls a step | probe (µs) | in the run (µs) | in run − probe (µs) |')
print('|---|---|---|---|---|---|---|---|')
for f in sorted(glob.glob(sys.argv[1] + '/out/*/results.json'), key=lambda p: (int(p.split('/')[-2].split('-')[0][1:]), p)):
    d = json.load(open(f))
    tpot = [c for c in d['comparison'] if c['metric'] == 'tpot'][0]['measured']['p50']
    for res in d['measurement']['ranks']:
        steps = len(res['step_end_s'][0])
        dec = res['phase_busy_s']['decode']
        its = dec['all_reduce']; n = len(its)
        calls = res['decode_counts']['calls']['all_reduce'] / n
        inrun = statistics.median(its) / calls
        comp = sum(statistics.median(v) for k, v in dec.items() if k not in ('all_reduce', 'all_gather')) / steps
        p = [x for x in res['link_probes'] if x['kind'] == 'all_reduce'][0]
        print(f"| {os.path.basename(os.path.dirname(f))} | rank {res['rank']} | {tpot*1e6:.0f} | {comp*1e6:.1f} | {calls/steps:.0f} | {p['median_s']*1e6:.2f} | {inrun*1e6:.2f} | {(inrun-p['median_s'])*1e6:.2f} |")
