#!/usr/bin/env python3
"""Per rank, a run.sh pass's measured iterations split by op kind (the executor's per-iteration
timers, results.json's phase_busy_s): compute (every kind but the four below), all_reduce,
all_gather, recv, send, and in prefill the iteration's prefill with its start lag (the total the
op check times from one start), the rest of it outside the op timers ("other"), µs, median and
mean over every iteration of both variants' runs; beside it the model's per-rank busy times of
the same runs' estimate (after's) where it has them.

Usage: iterations.py WORKDIR CONFIG [prefill|decode]
"""
import glob
import json
import statistics as st
import sys

w, cfg = sys.argv[1], sys.argv[2]
phase = sys.argv[3] if len(sys.argv) > 3 else "prefill"
COMM = ("all_reduce", "all_gather", "recv", "send")
rows = {}
for fn in sorted(glob.glob(f"{w}/out/*/{cfg}-*/results.json")):
    m = json.load(open(fn))["measurement"]
    for r in m["ranks"]:
        pb = r["phase_busy_s"][phase]
        n = len(next(iter(pb.values())))
        x = rows.setdefault(r["rank"], {})
        for i in range(n):
            x.setdefault("compute", []).append(sum(pb[k][i] for k in pb if k not in COMM) * 1e6)
            for k in COMM:
                x.setdefault(k, []).append(pb.get(k, [0] * n)[i] * 1e6)
            if phase == "prefill":
                lag = (r.get("start_lag_s") or [0] * n)[i]
                tot = (r["prefill_s"][i] + lag) * 1e6
                x.setdefault("total", []).append(tot)
                x.setdefault("other", []).append(tot - sum(pb[k][i] for k in pb) * 1e6)
cols = ["compute", *COMM] + (["other", "total"] if phase == "prefill" else [])
print(f"{cfg}, {phase}: per rank, every measured iteration of the pass's runs, µs: median (mean)\n")
print("| rank | n | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for rk, x in sorted(rows.items()):
    print(f"| {rk} | {len(x['compute'])} | " + " | ".join(f"{st.median(x[c]):.0f} ({st.mean(x[c]):.0f})" for c in cols) + " |")
