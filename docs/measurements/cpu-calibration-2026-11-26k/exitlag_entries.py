#!/usr/bin/env python3
"""The exit-lag entries of calibrations (TOMLs given), grouped by rank count, kind, burst class and
size: n, min / median / max of the entry (µs per call) and the bursts' wall times (µs)."""
import tomllib, sys, collections
rows = collections.defaultdict(list)
for f in sys.argv[1:]:
    d = tomllib.load(open(f, 'rb'))
    for e in d['op_time']:
        if e['kind'] in ('core_exit_lag', 'core_exit_lag_idle'):
            b = e['context'] / 1e3
            cls = '<12' if b < 12 else '12-60' if b < 60 else '60-200' if b < 200 else '>200'
            rows[(e['ranks'], e['kind'], cls, e['size'])].append((e['time_s'] * 1e6, b))
order = {'<12': 0, '12-60': 1, '60-200': 2, '>200': 3}
print('| ranks | kind | burst (µs) | bytes | n | exit lag µs: min / median / max | bursts (µs) |')
print('|---|---|---|---|---|---|---|')
for k in sorted(rows, key=lambda k: (k[0], k[1], order[k[2]], k[3])):
    v = rows[k]; ts = sorted(x[0] for x in v); bs = sorted(x[1] for x in v)
    print(f'| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {len(v)} | {ts[0]:.1f} / {ts[(len(ts)-1)//2]:.1f} / {ts[-1]:.1f} | {bs[0]:.0f}–{bs[-1]:.0f} |')
