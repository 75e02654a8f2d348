#!/usr/bin/env python3
"""tp2pp2-tiny's prefill per traced run in three segments, measured and modeled (µs): A, stage 0's
micro-batch 0 (the other stage asleep in its receive); B, stage 0's micro-batch 1 beside stage 1's
micro-batch 0 (all four ranks in bursts and all-reduces); C, stage 1's micro-batch 1 (stage 0
done). Per segment: window, compute, all-reduce time (partner wait + the rest), ranks 0 and 2.
Then each run's per-iteration TTFT on rank 2 (prefill plus start lag), sorted, and the traced
(last) one.

Usage: segments.py WORKDIR   (run.sh with TRACE=1; scripts/calibration-agreement/phases.py)
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts/calibration-agreement"))
import phases  # noqa: E402

w = sys.argv[1]
print("| trace | side | A: r0 mb0 window / compute / all-reduce | B: r0 mb1 | B: r2 mb0 after its receive | C: r2 mb1 | TTFT |")
print("|---|---|---|---|---|---|---|")
for fn in sorted(glob.glob(f"{w}/out/*/tp2pp2-tiny-*.trace.json")):
    ev = json.load(open(fn))["traceEvents"]
    name = fn.split("/")[-2] + "/" + os.path.basename(fn)[:-11]
    for pid, side in ((1, "measured"), (2, "modeled")):
        s = phases.windows(ev, pid, "prefill")
        a, b, b2, c = s[(0, 0)], s[(0, 1)], s[(2, 0)], s[(2, 1)]
        cell = lambda d, win: f"{win:.0f} / {d['compute']:.0f} / {d['ar wait'] + d['ar rest']:.0f}"
        print(f"| {name} | {side} | {cell(a, a['window'])} | {cell(b, b['window'])} | "
              f"{cell(b2, b2['window'] - b2['recv'])} | {cell(c, c['window'])} | {c['end']:.0f} |")
print()
for fn in sorted(glob.glob(f"{w}/out/*/tp2pp2-tiny-*/results.json")):
    m = json.load(open(fn))["measurement"]
    r = [x for x in m["ranks"] if x["rank"] == 2][0]
    lag = r.get("start_lag_s") or [0] * len(r["prefill_s"])
    t = [(p + l) * 1e3 for p, l in zip(r["prefill_s"], lag)]
    print(f"{fn.split('/')[-3]}/{fn.split('/')[-2]}: traced {t[-1]:.2f} ms; per iteration, sorted: "
          + " ".join(f"{x:.2f}" for x in sorted(t)))
