#!/usr/bin/env python3
"""The core wait's repeats against the next run's state: DIR holds probe-K.json (calibrate's core-wait
loops at 4 process ranks on 2 cores, 15 repeats: every repeat's W per burst, µs, as calibrate computes it,
the median over sizes of (after a burst − back to back)/2) and run-K.json (a tp2-dp2-tiny run of 30
iterations started right after probe K: each rank's prefill all-reduce time and prefill per iteration,
from its results.json). Per probe: W after the ≈ 25 µs burst (a prefill's burst
between two all-reduces) as a median of all 15 repeats, of each five consecutive ones (what a 5-repeat
calibration reads), and of the majority state (the repeats split in two by a 1-D two-means on the log of
each repeat's W summed in logs over the four bursts); the next run's prefill all-reduce per call (median
over its 4 ranks × 30 iterations) and TTFT p50 on rank 0. Then the correlation of each estimate with the
run's per call over every DIR given.

Usage: probe.py DIR...
"""
import json
import math
import statistics as st
import sys


def split(vals):
    xs = sorted((math.log(max(v, 1e-7)), i) for i, v in enumerate(vals))
    best = None
    for c in range(1, len(xs)):
        a, b = [x for x, _ in xs[:c]], [x for x, _ in xs[c:]]
        ss = sum((x - st.mean(a)) ** 2 for x in a) + sum((x - st.mean(b)) ** 2 for x in b)
        if best is None or ss < best[0]:
            best = (ss, c)
    return {i for _, i in xs[best[1]:]}


def corr(x, y):
    mx, my = st.mean(x), st.mean(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def rank(x):
    s = sorted(x)
    return [s.index(v) for v in x]


rows = []
print("| probe | W after burst (µs) | W: median of 15 | medians of repeats 1–5, 6–10, 11–15 | split: upper state | W: lower / upper state | W: majority state | next run: per call (µs) | TTFT p50 rank 0 (ms) |")
print("|---|---|---|---|---|---|---|---|---|")
for d in sys.argv[1:]:
    for k in range(1, 100):
        try:
            p = json.load(open(f"{d}/probe-{k}.json"))
        except FileNotFoundError:
            break
        w = [[x * 1e6 for x in row] for row in p["w"]]
        R = len(w[0])
        score = [sum(math.log(max(w[b][r], 1.0)) for b in range(len(w))) for r in range(R)]
        up = split([math.exp(s) for s in score])
        b2 = w[1]
        lo, hi = [b2[r] for r in range(R) if r not in up], [b2[r] for r in range(R) if r in up]
        maj = st.median(hi) if len(hi) > len(lo) else st.median(lo)
        sub = [st.median(b2[i:i + 5]) for i in range(0, R, 5)]
        m = json.load(open(f"{d}/run-{k}.json"))
        pc = st.median([x * 1e6 / 34 for r in m["ranks"] for x in r["prefill_all_reduce_s"]])
        ttft = st.median(m["ranks"][0]["prefill_s"]) * 1e3
        rows.append(dict(med15=st.median(b2), maj=maj, sub=sub, last5=sub[-1], pc=pc))
        order = "".join("u" if r in up else "l" for r in range(R))
        print(f"| {d.rstrip('/').split('/')[-1]}/{k} | {p['wall'][1]*1e6:.0f} | {st.median(b2):.1f} | {' / '.join(f'{x:.1f}' for x in sub)} | {len(hi)}/{R} `{order}` | {st.median(lo):.1f} / {st.median(hi):.1f} | {maj:.1f} | {pc:.0f} | {ttft:.2f} |")
pc = [r["pc"] for r in rows]
print(f"\nOver {len(rows)} probes, each estimate of W against the next run's per call:\n")
print("| estimate | Pearson | Spearman |")
print("|---|---|---|")
for key, what in (("med15", "median of 15"), ("maj", "majority state's median"), ("last5", "median of the last 5 (nearest the run)")):
    x = [r[key] for r in rows]
    print(f"| {what} | {corr(x, pc):.2f} | {corr(rank(x), rank(pc)):.2f} |")
x = [s for r in rows for s in r["sub"]]
y = [r["pc"] for r in rows for _ in r["sub"]]
print(f"| median of 5 consecutive (each of the three) | {corr(x, y):.2f} | {corr(rank(x), rank(y)):.2f} |")
dev = st.mean(abs(s - r["med15"]) for r in rows for s in r["sub"])
print(f"\nMean |median of 5 consecutive − median of 15|: {dev:.1f} µs.")
x = [r["med15"] for r in rows]
mx, my = st.mean(x), st.mean(pc)
b = sum((a - mx) * (c - my) for a, c in zip(x, pc)) / sum((a - mx) ** 2 for a in x)
print(f"Least-squares line: per call = {my - b * mx:.0f} µs + {b:.2f} · W(median of 15).")
