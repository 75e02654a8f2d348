#!/usr/bin/env python3
"""tp2-dp2-tiny's prefill iterations in two states: per run, each measured iteration's
all-reduce time (results.json phase_busy_s, the prefill's 34 all-reduces) on rank 0 (replica 0)
and rank 2 (replica 1), an iteration "fast" where it is under THRESH_MS (2.8 ms by default: the
gap between the two clusters), and per state the median per iteration and per call of the
all-reduces, the compute and the iteration's prefill from one start (µs), beside the model's.

Usage: states.py WORKDIR [THRESH_MS]
"""
import glob
import json
import os
import statistics as st
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts/calibration-agreement"))
import phases  # noqa: E402

w = sys.argv[1]
th = float(sys.argv[2]) if len(sys.argv) > 2 else 2.8
COLL = ("all_reduce", "all_gather")
CALLS = 34  # 2 per layer × 8 layers + the embedding's, per micro-batch, × 2 micro-batches
pool = {"fast": {}, "slow": {}}
seq = []
print(f"| run | rank 0: fast iterations | rank 2: fast | both replicas in the same state | model: all-reduces per call (µs) | model TTFT (µs) |")
print("|---|---|---|---|---|---|")
for fn in sorted(glob.glob(f"{w}/out/*/tp2-dp2-tiny-*/results.json")):
    run = fn.split("/")[-3] + "/" + fn.split("/")[-2]
    ev = json.load(open(fn[: -len("/results.json")] + ".trace.json"))["traceEvents"]
    mod = [e for e in ev if e.get("pid") == 2 and e.get("ph") == "X" and e["args"].get("phase") == "prefill"
           and e["tid"] == 0 and e["cat"] == "all_reduce"]
    mper = st.mean(e["dur"] for e in mod)
    mttft = max(e["ts"] + e["dur"] for e in ev if e.get("pid") == 2 and e.get("ph") == "X"
                and e["args"].get("phase") == "prefill")
    m = json.load(open(fn))["measurement"]
    states = {}
    for r in m["ranks"]:
        pb = r["phase_busy_s"]["prefill"]
        n = len(r["prefill_s"])
        lag = r.get("start_lag_s") or [0] * n
        s = []
        for i in range(n):
            ar = pb["all_reduce"][i] * 1e6
            comp = sum(pb[k][i] for k in pb if k not in COLL) * 1e6
            tot = (r["prefill_s"][i] + lag[i]) * 1e6
            state = "fast" if ar < th * 1e3 else "slow"
            s.append(state)
            d = pool[state]
            for k, v in (("all_reduce", ar), ("per call", ar / CALLS), ("compute", comp), ("total", tot),
                         ("model per call", mper), ("model total", mttft)):
                d.setdefault(k, []).append(v)
        states[r["rank"]] = s
    seq.append((run, states[0]))
    f0 = sum(x == "fast" for x in states[0])
    f2 = sum(x == "fast" for x in states[2])
    same = sum(a == b for a, b in zip(states[0], states[2]))
    print(f"| {run} | {f0}/{len(states[0])} | {f2}/{len(states[2])} | {same}/{len(states[0])} | {mper:.0f} | {mttft:.0f} |")
print("\nRank 0's iterations in order (f fast, s slow):\n")
for run, s0 in seq:
    print(f"- {run}: {''.join(x[0] for x in s0)}")
print("\nPer state, every rank and iteration of the runs, µs: median (n)\n")
print("| state | n | all-reduces per iteration | per call | compute | prefill (TTFT) | the same runs' model: per call | TTFT |")
print("|---|---|---|---|---|---|---|---|")
for state, d in pool.items():
    if d:
        print(f"| {state} | {len(d['total'])} | " + " | ".join(f"{st.median(d[k]):.0f}" for k in
              ("all_reduce", "per call", "compute", "total", "model per call", "model total")) + " |")
