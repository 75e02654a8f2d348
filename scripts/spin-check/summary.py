#!/usr/bin/env python3
"""The summary table of scripts/spin-check.sh: for each case and binary,
over the rounds, the median (min–max) of each run's TPOT p50, and the
medians of TPOT mean and TTFT p50 (ms); every run's TPOT p50 in round
order; the TPOT p50 median over the same binary's 1-rank median; the load
average (1 min) before the runs, min–max.

usage: summary.py OUTDIR
"""
import csv
import json
import os
import statistics
import sys


def main():
    out = sys.argv[1]
    rows = list(csv.DictReader(open(os.path.join(out, 'runs.tsv')), delimiter='\t'))
    runs = {}  # (case, binary) -> [(round, tpot p50, tpot mean, ttft p50)]
    loads = []
    failed = []
    for r in rows:
        loads.append(float(r['load1']))
        key = (r['case'], r['binary'])
        name = '%s-%s-%s' % (r['case'], r['binary'], r['round'])
        if r['status'] != 'ok':
            failed.append(name)
            continue
        m = json.load(open(os.path.join(out, 'runs', name + '.json')))['measurement']
        runs.setdefault(key, []).append((int(r['round']), m['tpot_s']['p50'] * 1e3,
                                         m['tpot_s']['mean'] * 1e3, m['ttft_s']['p50'] * 1e3))
    cases = []
    for r in rows:
        if r['case'] not in cases:
            cases.append(r['case'])
    med = lambda xs: statistics.median(xs)
    one = {b: med([x[1] for x in runs.get(('1rank', b), [])]) for b in ('before', 'after')
           if runs.get(('1rank', b))}
    print('Load average (1 min) before the runs: %.2f–%.2f; %d runs, %d failed%s' % (
        min(loads), max(loads), len(rows), len(failed),
        (' (' + ', '.join(failed) + ')') if failed else ''))
    print()
    print('| case | binary | TPOT p50 (ms), median (min–max) | TPOT mean (ms) | TTFT p50 (ms) '
          '| / 1 rank | runs: TPOT p50 (ms) |')
    print('|---|---|---|---|---|---|---|')
    for c in cases:
        for b in ('before', 'after'):
            xs = sorted(runs.get((c, b), []))
            if not xs:
                print('| %s | %s | — | — | — | — | |' % (c, b))
                continue
            p50 = [x[1] for x in xs]
            ratio = '%.2f' % (med(p50) / one[b]) if b in one else '—'
            print('| %s | %s | %.3f (%.3f–%.3f) | %.3f | %.3f | %s | %s |' % (
                c, b, med(p50), min(p50), max(p50), med([x[2] for x in xs]),
                med([x[3] for x in xs]), ratio, ' '.join('%.3f' % v for v in p50)))
    print()
    print('after / before (medians of TPOT p50):')
    for c in cases:
        bx = [x[1] for x in runs.get((c, 'before'), [])]
        ax = [x[1] for x in runs.get((c, 'after'), [])]
        if bx and ax:
            print('  %s: %.2f' % (c, med(ax) / med(bx)))


if __name__ == '__main__':
    main()
