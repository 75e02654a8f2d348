#!/usr/bin/env python3
"""Splits each 2-rank all-reduce of a traced run's last iteration (run --trace: the measured
timeline is pid 1, one thread per rank) into the partners' arrival skew and the time from the later
arrival to the earlier exit, per phase. Usage: split.py TRACE.json..."""
import collections, json, statistics as st, sys
for f in sys.argv[1:]:
    t = json.load(open(f))['traceEvents']
    d = collections.defaultdict(dict)
    for e in t:
        if e.get('pid') != 1 or e.get('ph') == 'M' or not e['name'].endswith('.ar'):
            continue
        a = e['args']
        d[(a['phase'], a.get('step', -1), e['name'])][e['tid']] = (e['ts'], e['dur'])
    out = []
    for ph in ['prefill', 'decode']:
        own, dur, skew = [], [], []
        for k, v in d.items():
            if k[0] != ph or len(v) < 2:
                continue
            (s0, d0), (s1, d1) = v[0], v[1]
            own.append(min(s0 + d0, s1 + d1) - max(s0, s1))
            dur.append((d0 + d1) / 2)
            skew.append(abs(s0 - s1))
        out.append('%s: %d calls, mean time in the call %.2f µs, mean |arrival skew| %.2f µs, later arrival → earlier exit mean %.2f (median %.2f) µs'
                   % (ph, len(dur), st.mean(dur), st.mean(skew), st.mean(own), st.median(own)))
    print(f.split('/')[-1], '|', ' | '.join(out))
