#!/usr/bin/env python3
"""The op check's rows of a run.sh pass with each row's measured time pooled over both variants'
runs (the median of the six runs' rows: both variants run the same executor) and each variant's
modeled time the median over its three runs: modeled / measured, ** outside 20 %.

Usage: pooledrows.py WORKDIR [CONFIG ...]   (default: tp2pp2-tiny tp2-dp2-tiny)
"""
import json
import os
import statistics
import sys

w = sys.argv[1]
configs = sys.argv[2:] or ["tp2pp2-tiny", "tp2-dp2-tiny"]
print("| config | phase | kind | measured (µs, pooled) | before | after |")
print("|---|---|---|---|---|---|")
for cfg in configs:
    meas, mods = {}, {"before": {}, "after": {}}
    for v in ("before", "after"):
        for r in (1, 2, 3):
            p = os.path.join(w, "out", v, f"{cfg}-{r}", "results.json")
            if not os.path.exists(p):
                continue
            for row in json.load(open(p)).get("op_check") or []:
                if row.get("measured_s", 0) <= 0:
                    continue
                k = (row["phase"], row["kind"])
                meas.setdefault(k, []).append(row["measured_s"])
                mods[v].setdefault(k, []).append(row["modeled_s"])
    for k in sorted(meas, key=lambda k: (k[0] != "prefill", -statistics.median(meas[k]))):
        m = statistics.median(meas[k])
        cells = []
        for v in ("before", "after"):
            if k not in mods[v]:
                cells.append("—")
                continue
            r = statistics.median(mods[v][k]) / m
            cells.append(f"{r:.2f}{'' if abs(r - 1) <= 0.2 else ' **'}")
        print(f"| {cfg} | {k[0]} | {k[1]} | {m * 1e6:.1f} | " + " | ".join(cells) + " |")
