#!/usr/bin/env python3
"""tp2-dp2-tiny's prefill, run against model, per run and rank: the executor's per-iteration
timers (results.json phase_busy_s, prefill_s, start_lag_s; every measured iteration) split into
compute (every op kind but the collectives), all_reduce, all_gather and the rest of the
iteration's prefill from one start ("other": outside the op timers, the start lag included),
median and 10th–90th percentile over the run's iterations, beside the model's of the same run
(the trace's second timeline: the same estimate the run's comparison prints). Then the traced
(last) iteration per micro-batch with scripts/calibration-agreement/phases.py's segments.

Usage: decompose.py WORKDIR [CONFIG]   (run.sh with TRACE=1)
"""
import glob
import json
import os
import sys

import statistics as st

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts/calibration-agreement"))
import phases  # noqa: E402

w = sys.argv[1]
cfg = sys.argv[2] if len(sys.argv) > 2 else "tp2-dp2-tiny"
COLL = ("all_reduce", "all_gather")


def pct(xs):
    q = st.quantiles(xs, n=10, method="inclusive")
    return f"{st.median(xs):.0f} ({q[0]:.0f}–{q[-1]:.0f})"


print(f"{cfg}, prefill: per run and rank, every measured iteration, µs: median (10th–90th "
      "percentile) measured / the model of the same run\n")
print("| run | rank | n | compute | all_reduce | all_gather | other | total | model: compute | all_reduce + all_gather | total |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
pooled = {}
for fn in sorted(glob.glob(f"{w}/out/*/{cfg}-*/results.json")):
    run = fn.split("/")[-3] + "/" + fn.split("/")[-2]
    tr = fn[: -len("/results.json")] + ".trace.json"
    mod = {}
    if os.path.exists(tr):
        ev = json.load(open(tr))["traceEvents"]
        mod = {k[0]: d for k, d in phases.windows(ev, 2, "prefill").items() if k[1] == "all"}
    m = json.load(open(fn))["measurement"]
    for r in m["ranks"]:
        pb = r["phase_busy_s"]["prefill"]
        n = len(r["prefill_s"])
        lag = r.get("start_lag_s") or [0] * n
        comp = [sum(pb[k][i] for k in pb if k not in COLL) * 1e6 for i in range(n)]
        ar = [pb.get("all_reduce", [0] * n)[i] * 1e6 for i in range(n)]
        ag = [pb.get("all_gather", [0] * n)[i] * 1e6 for i in range(n)]
        tot = [(r["prefill_s"][i] + lag[i]) * 1e6 for i in range(n)]
        oth = [tot[i] - comp[i] - ar[i] - ag[i] for i in range(n)]
        # the model prices the replicas alike: rank r's model is rank r mod TP of the trace
        d = mod.get(r["rank"]) or mod.get(r["rank"] % phases.TP)
        mc = f"{d['compute']:.0f} | {d['ar wait'] + d['ar rest']:.0f} | {d['end']:.0f}" if d else "– | – | –"
        print(f"| {run} | {r['rank']} | {n} | {pct(comp)} | {pct(ar)} | {pct(ag)} | {pct(oth)} | {pct(tot)} | {mc} |")
        for name, xs in (("compute", comp), ("all_reduce", ar), ("all_gather", ag), ("other", oth), ("total", tot)):
            pooled.setdefault(name, []).extend(xs)
        if d:
            for name, v in (("m compute", d["compute"]), ("m coll", d["ar wait"] + d["ar rest"]), ("m total", d["end"])):
                pooled.setdefault(name, []).extend([v] * n)
print("\nPooled over every run, rank and iteration, µs: median (10th–90th percentile); the model's "
      "value weighted alike:\n")
for k, v in pooled.items():
    print(f"- {k}: {pct(v)}")
