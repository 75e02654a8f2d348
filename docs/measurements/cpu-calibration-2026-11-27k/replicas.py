#!/usr/bin/env python3
"""tp2-dp2-tiny per run: the median over iterations of each replica's prefill end (the later of
its two ranks' start + prefill, from the iteration's earliest start over all ranks) and of the
later of the two replicas, against the run's TTFT p50 and its model (µs).
Usage: replicas.py WORKDIR"""
import json, statistics, sys

W = sys.argv[1]
print("| variant | round | replica 0 | replica 1 | later of the two | TTFT p50 | modeled |")
print("|---|---|---|---|---|---|---|")
for v in ("before", "after"):
    for r in (1, 2, 3):
        d = json.load(open(f"{W}/out/{v}/tp2-dp2-tiny-{r}/results.json"))
        m = d["measurement"]
        ranks = m["ranks"]
        reps = {}
        for rk in ranks:
            reps.setdefault(rk["replica"], []).append(rk)
        a, b, t = [], [], []
        for i in range(m["iterations"]):
            st = min(rk["start_s"][i] for rk in ranks)
            ends = {k: max(rk["start_s"][i] + rk["prefill_s"][i] for rk in v2) for k, v2 in reps.items()}
            a.append((ends[0] - st) * 1e6)
            b.append((ends[1] - st) * 1e6)
            t.append((max(ends.values()) - st) * 1e6)
        mod = next(c for c in d["comparison"] if c["metric"] == "ttft")["modeled"] * 1e6
        print(f"| {v} | {r} | {statistics.median(a):.0f} | {statistics.median(b):.0f} | {statistics.median(t):.0f} | {m['ttft_s']['p50']*1e6:.0f} | {mod:.0f} |")
