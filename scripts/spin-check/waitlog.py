#!/usr/bin/env python3
"""Summarise PARTBENCH_SHM_WAITLOG folders (exec/tcpcomm): per rank and
peer, the waits that spun (met: ended within the spin; missed), those that
did not spin, futex sleeps per wait, wait-duration quantiles (µs,
p10/p50/p90) of each kind, and the share of waits begun while the policy
spun (share of missed spins < 512) in the log's first and last halves;
and, where the start column is Unix time (start_unix_ns), the spins begun
in the first 1 ms of every 16 ms of Unix time (the probe windows of a policy
tried on 2026-11-26, docs/measurements/speed.md) and how many were met.

usage: waitlog.py DIR [DIR ...]   (each DIR holds waits-rR-pQ.tsv files)
"""
import glob
import os
import statistics
import sys


def load(path):
    """Rows (start, wait, budget, sleeps, missed) in ns; the missed share
    is the last column (6 columns without "short", 7 with)."""
    rows = []
    for line in open(path):
        if not line[0].isdigit():
            continue
        f = [int(x) for x in line.split('\t')]
        rows.append((f[0], f[1], f[2], f[3], f[-1]))
    return rows


def q(x):
    if len(x) < 2:
        return '-'
    p = statistics.quantiles([v / 1e3 for v in x], n=10, method='inclusive')
    return '%.1f/%.1f/%.1f' % (p[0], statistics.median(v / 1e3 for v in x), p[8])


def main():
    print('| folder | rank-peer | waits | spun | met | missed | not spun | sleeps/wait '
          '| µs spun-met | µs spun-missed | µs not spun | spinning, 1st half | 2nd half '
          '| in windows: spun, met |')
    print('|' + '---|' * 14)
    for d in sys.argv[1:]:
        for f in sorted(glob.glob(os.path.join(d, 'waits-*.tsv'))):
            a = load(f)
            if not a:
                continue
            met = [r[1] for r in a if r[2] > 0 and r[1] <= r[2]]
            missed = [r[1] for r in a if r[2] > 0 and r[1] > r[2]]
            not_spun = [r[1] for r in a if r[2] == 0]
            # spinning regime: the share before this wait was < 512
            on = [prev[4] < 512 for prev in [(0,) * 5] + a[:-1]]
            h = len(a) // 2
            win = '-'
            if a[0][0] > 10**18:  # Unix time
                inw = [r for r in a if r[2] > 0 and (r[0] // 10**6) % 16 == 0]
                win = '%d, %d' % (len(inw), sum(1 for r in inw if r[1] <= r[2]))
            print('| %s | %s | %d | %d | %d | %d | %d | %.2f | %s | %s | %s | %.2f | %.2f | %s |' % (
                os.path.basename(d.rstrip('/')), os.path.basename(f)[6:-4], len(a),
                len(met) + len(missed), len(met), len(missed), len(not_spun),
                sum(r[3] for r in a) / len(a), q(met), q(missed), q(not_spun),
                sum(on[:h]) / max(h, 1), sum(on[h:]) / max(len(a) - h, 1), win))


if __name__ == '__main__':
    main()
