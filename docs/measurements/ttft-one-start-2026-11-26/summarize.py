#!/usr/bin/env python3
"""Tabulates run.sh's results: per config and variant, each run's TTFT p50
(and, in "after" runs, the same runs' TTFT from the last stage's own start
and the median spread of the ranks' starts), in ms. Usage: summarize.py WORKDIR."""
import json, os, statistics, sys

w = sys.argv[1] if len(sys.argv) > 1 else "/tmp/t0meas"
for cfg in ("pp2-tiny", "layerwise16-tiny"):
    print(f"## {cfg}\n")
    print("| variant | TTFT p50 per run (ms) | median | min–max | TPOT p50 median (ms) | own-start TTFT p50 per run (ms) | start spread per run (ms) |")
    print("|---|---|---|---|---|---|---|")
    for v in ("before", "after"):
        ttft, own, spread, tpot = [], [], [], []
        for i in range(1, 6):
            p = os.path.join(w, "out", v, f"{cfg}-{i}", "results.json")
            if not os.path.exists(p):
                continue
            m = json.load(open(p))["measurement"]
            ttft.append(1e3 * m["ttft_s"]["p50"])
            tpot.append(1e3 * m["tpot_s"]["p50"])
            if "ttft_own_start_s" in m:
                own.append(1e3 * m["ttft_own_start_s"]["p50"])
                spread.append(1e3 * m["time_base"]["start_spread_s"])
        if not ttft:
            continue
        f = lambda xs: ", ".join(f"{x:.3f}" for x in xs) or "—"
        print(f"| {v} | {f(ttft)} | {statistics.median(ttft):.3f} | {min(ttft):.3f}–{max(ttft):.3f} | {statistics.median(tpot):.3f} | {f(own)} | {f(spread)} |")
    print()
