#!/usr/bin/env python3
"""Reads alternate.sh's output (round binary benchmark cpu-ns/op B/op allocs/op load1) and prints,
per binary, each benchmark's median CPU time per op and B/op, the after/before speed-up of the
medians, and per round the 16,384-GPU rate over the 16-GPU rate of BenchmarkSearchScale (candidates
per CPU-second: 287 candidates a 16-GPU search, 1,400 a 16,384-GPU one)."""
import sys, statistics as st
from collections import defaultdict
CANDS = {'16': 287, '16384': 1400}
runs = defaultdict(list)
rounds = defaultdict(dict)
loads = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 7 or not f[2].startswith('Benchmark'):
        continue
    r, b, name, cpu, mem, al, load = f
    name = name.split('-')[0]
    runs[(b, name)].append((float(cpu), float(mem), float(al)))
    rounds[(b, r)][name] = float(cpu)
    loads.append(float(load))
bins = sorted({b for b, _ in runs}, key=lambda b: (b != 'sim-base', b))
names = sorted({n for _, n in runs})
print('load1 %.1f-%.1f' % (min(loads), max(loads)))
for n in names:
    meds = [st.median([c for c, _, _ in runs[(b, n)]]) for b in bins]
    mems = [st.median([m for _, m, _ in runs[(b, n)]]) for b in bins]
    als = [st.median([a for _, _, a in runs[(b, n)]]) for b in bins]
    s = '  '.join('%s %.3f ms %.0f B %.0f allocs' % (b, m / 1e6, mm, a) for b, m, mm, a in zip(bins, meds, mems, als))
    print('%-40s %s  before/after %.3f' % (n, s, meds[0] / meds[-1]))
for b in bins:
    rs = []
    for (bb, r), d in sorted(rounds.items(), key=lambda x: int(x[0][1])):
        if bb != b:
            continue
        a, z = d.get('BenchmarkSearchScale/gpus=16'), d.get('BenchmarkSearchScale/gpus=16384')
        if a and z:
            rs.append((CANDS['16384'] / z) / (CANDS['16'] / a))
    print('%s ratio per round: %s; median %.3f, min %.3f, %d of %d >= 0.5' % (b, ' '.join('%.3f' % x for x in rs), st.median(rs), min(rs), sum(x >= 0.5 for x in rs), len(rs)))
