#!/usr/bin/env python3
"""Per round of a run.sh pass (shared mode, BEFORE_FILTER first-repeats.py): the core wait at 4 ranks
on 2 cores after the ≈ 25 µs burst (the calibration's second core_wait entry) as after prices it (median
of 15 repeats) and before (median of the first 5), with all 15 in the order measured (from the note
"core wait repeats at 4 ranks ..."); tp2-dp2-tiny's modeled TTFT by each and its two runs of the
round: TTFT p50 and the prefill all-reduce per call (median over 4 ranks × 30 iterations); the same for
2 ranks (tp2-tiny's W) beside tp2-tiny's modeled and measured TPOT.

Usage: rounds.py WORKDIR
"""
import json
import os
import re
import statistics as st
import sys
import tomllib

W = sys.argv[1]


def repeats(cal, n):
    for note in cal["calibration"]["notes"]:
        m = re.match(rf"core wait repeats at {n} ranks on 2 cores, .*? in ns\): (.*)$", note)
        if m:
            parts = [p.split(": ") for p in m.group(1).split("; ")]
            return [(int(s.removeprefix("size ")), [float(v) for v in vals.split()]) for s, vals in parts]
    return None


def metric(d, name):
    for c in d["comparison"]:
        if c["metric"] == name:
            return c["measured"]["p50"], c["modeled"]


print("| round | W at 4 ranks after burst (ns) | 15 repeats in order (µs) | after: median of 15 | before: median of first 5 | tp2-dp2-tiny modeled TTFT after / before (ms) | runs after, before: TTFT p50 (ms) | per call (µs) |")
print("|---|---|---|---|---|---|---|---|")
for r in (1, 2, 3):
    cal = tomllib.load(open(f"{W}/after-{r}.toml", "rb"))
    size, vals = repeats(cal, 4)[1]
    runs = {}
    for v in ("after", "before"):
        d = json.load(open(f"{W}/out/{v}/tp2-dp2-tiny-{r}/results.json"))
        meas, mod = metric(d, "ttft")
        pc = st.median(x * 1e6 / 34 for rk in d["measurement"]["ranks"] for x in rk["phase_busy_s"]["prefill"]["all_reduce"])
        runs[v] = (meas, mod, pc)
    print(f"| {r} | {size} | {' '.join(f'{x:.1f}' for x in vals)} | {st.median(vals):.1f} | {st.median(vals[:5]):.1f} | "
          f"{runs['after'][1]*1e3:.2f} / {runs['before'][1]*1e3:.2f} | {runs['after'][0]*1e3:.2f}, {runs['before'][0]*1e3:.2f} | {runs['after'][2]:.0f}, {runs['before'][2]:.0f} |")
print()
print("| round | W at 2 ranks after burst (ns) | 15 repeats in order (µs) | after: median of 15 | before: median of first 5 | tp2-tiny modeled TPOT after / before (ms) | runs after, before: TPOT p50 (ms) |")
print("|---|---|---|---|---|---|---|")
for r in (1, 2, 3):
    cal = tomllib.load(open(f"{W}/after-{r}.toml", "rb"))
    rep = repeats(cal, 2)
    if not rep:
        continue
    size, vals = rep[0]
    cells = {}
    for v in ("after", "before"):
        d = json.load(open(f"{W}/out/{v}/tp2-tiny-{r}/results.json"))
        cells[v] = metric(d, "tpot")
    print(f"| {r} | {size} | {' '.join(f'{x:.1f}' for x in vals)} | {st.median(vals):.1f} | {st.median(vals[:5]):.1f} | "
          f"{cells['after'][1]*1e3:.3f} / {cells['before'][1]*1e3:.3f} | {cells['after'][0]*1e3:.3f}, {cells['before'][0]*1e3:.3f} |")
