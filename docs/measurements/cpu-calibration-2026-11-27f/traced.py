#!/usr/bin/env python3
"""tp2-dp2-tiny's traced (last) prefill per run, measured / modeled, per rank and micro-batch
(scripts/calibration-agreement/phases.py's split), µs: window, compute, partner wait, the
all-reduce's rest, gaps; the state of the iteration (fast where rank 0's all-reduces took under
2.8 ms, states.py).

Usage: traced.py WORKDIR
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts/calibration-agreement"))
import phases  # noqa: E402

w = sys.argv[1]
print("| run | state | rank | mb | window | compute | partner wait | all-reduce rest | gap |")
print("|---|---|---|---|---|---|---|---|---|")
for fn in sorted(glob.glob(f"{w}/out/*/tp2-dp2-tiny-*.trace.json")):
    run = fn.split("/")[-2] + "/" + os.path.basename(fn)[: -len(".trace.json")]
    ev = json.load(open(fn))["traceEvents"]
    meas, mod = phases.windows(ev, 1, "prefill"), phases.windows(ev, 2, "prefill")
    ar0 = sum(e["dur"] for e in ev if e.get("pid") == 1 and e.get("ph") == "X" and e["tid"] == 0
              and e["cat"] == "all_reduce" and e["args"].get("phase") == "prefill")
    state = "fast" if ar0 < 2800 else "slow"
    for (tid, mb) in sorted(meas, key=lambda k: (k[0], str(k[1]))):
        a, b = meas[(tid, mb)], mod.get((tid % phases.TP, mb))
        cell = lambda k: f"{a[k]:.0f} / {b[k]:.0f}" if b else f"{a[k]:.0f} / –"
        print(f"| {run} | {state} | {tid} | {mb} | {cell('window')} | {cell('compute')} | {cell('ar wait')} | "
              f"{cell('ar rest')} | {cell('gap')} |")
