#!/usr/bin/env python3
"""Per-variant agreement of a run.sh pass whose two binaries run differently (here: before
leaves 4 ranks on 2 CPUs to the scheduler, after binds them two to a CPU), so that pooling
both variants' runs, as summarize.py's first table does, would mix two placements.
Per config, metric and variant: measured = the median of that variant's three runs' p50,
modeled = the median of its three models, error = (modeled - measured) / measured; beside it
each run's p50 and, for the 4-rank TP configs, each run's prefill all-reduce per call
(median over ranks x iterations of the executor's all_reduce timer / calls per iteration).
Usage: pervariant.py WORKDIR"""
import json, os, statistics, sys

W = sys.argv[1]
CONFIGS = ["single-tiny", "tp2-tiny", "pp2-tiny", "tp2pp2-tiny", "tp2-dp2-tiny", "layerwise16-tiny"]
METRICS = [("ttft", "TTFT (ms)", 1e3), ("tpot", "TPOT (ms)", 1e3), ("tps", "TPS (tok/s)", 1)]


def load(variant, cfg):
    out = []
    for i in (1, 2, 3):
        p = os.path.join(W, "out", variant, f"{cfg}-{i}", "results.json")
        if os.path.exists(p):
            out.append(json.load(open(p)))
    return out


def metric(d, name):
    for c in d["comparison"]:
        if c["metric"] == name:
            return c["measured"]["p50"], c["modeled"]
    raise KeyError(name)


def per_call(d):
    m = d["measurement"]
    per = []
    for rk in m["ranks"]:
        n = rk["prefill_counts"]["calls"].get("all_reduce", 0) / m["iterations"]
        if n:
            per += [x / n * 1e6 for x in rk["phase_busy_s"]["prefill"]["all_reduce"]]
    return statistics.median(per) if per else None


print("| config | metric | before: runs' p50 | measured | modeled | error | after: runs' p50 | measured | modeled | error |")
print("|---|---|---|---|---|---|---|---|---|---|")
for cfg in CONFIGS:
    runs = {v: load(v, cfg) for v in ("before", "after")}
    for name, label, scale in METRICS:
        cells = []
        for v in ("before", "after"):
            if not runs[v]:
                cells += ["—"] * 4
                continue
            meas = [metric(d, name)[0] for d in runs[v]]
            mod = statistics.median(metric(d, name)[1] for d in runs[v])
            med = statistics.median(meas)
            cells += [" / ".join(f"{x*scale:.3g}" for x in meas), f"{med*scale:.3g}", f"{mod*scale:.3g}", f"{(mod-med)/med*100:+.1f} %"]
        print(f"| {cfg} | {label} | " + " | ".join(cells) + " |")
print()
print("Prefill all-reduce per call, µs, per run (rounds 1 / 2 / 3):")
print()
print("| config | before | after |")
print("|---|---|---|")
for cfg in ("tp2pp2-tiny", "tp2-dp2-tiny", "tp2-tiny"):
    cells = []
    for v in ("before", "after"):
        cells.append(" / ".join(f"{per_call(d):.1f}" for d in load(v, cfg)))
    print(f"| {cfg} | " + " | ".join(cells) + " |")
print()
print("Bind notes (rank 0), per variant, first run of tp2-dp2-tiny:")
for v in ("before", "after"):
    r = load(v, "tp2-dp2-tiny")
    if r:
        print(f"- {v}: " + "; ".join(n for n in r[0]["notes"] if "bind" in n))
