#!/usr/bin/env python3
"""Tables of run.sh's runs: per config and variant (after, before) the median
over the three runs of the measured p50 of TTFT, TPOT and TPS against the
modeled value, error = (modeled - median) / median; and the op check, per
(config, phase, kind) the median over runs of measured and modeled time,
counted within +-20 % when |modeled/measured - 1| <= 0.2.
Usage: summarize.py WORKDIR"""
import json, os, statistics, sys

W = sys.argv[1] if len(sys.argv) > 1 else "/tmp/cpucal3"
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


print("| config | metric | measured p50, median (3 runs) | before: modeled | error | after: modeled | error |")
print("|---|---|---|---|---|---|---|")
for cfg in CONFIGS:
    runs = {v: load(v, cfg) for v in ("after", "before")}
    for name, label, scale in METRICS:
        meas = [metric(d, name)[0] for d in runs["after"] + runs["before"]]
        med = statistics.median(meas)
        cells = []
        for v in ("before", "after"):
            if not runs[v]:
                cells += ["—", "—"]
                continue
            mod = metric(runs[v][0], name)[1]
            cells += [f"{mod*scale:.3g}", f"{(mod-med)/med*100:+.1f} %"]
        spread = " / ".join(f"{m*scale:.3g}" for m in sorted(meas))
        print(f"| {cfg} | {label} | {med*scale:.3g} ({spread}) | " + " | ".join(cells) + " |")

print()
print("| config | op-check rows within 20 %: before | after |")
print("|---|---|---|")
tot = {"before": [0, 0], "after": [0, 0]}
rows_after = []
for cfg in CONFIGS:
    cells = []
    for v in ("before", "after"):
        runs = load(v, cfg)
        acc = {}
        for d in runs:
            for r in d.get("op_check") or []:
                if r.get("measured_s", 0) <= 0:
                    continue
                k = (r["phase"], r["kind"])
                acc.setdefault(k, ([], []))
                acc[k][0].append(r["measured_s"])
                acc[k][1].append(r["modeled_s"])
        n = ok = 0
        for k, (ms, mods) in acc.items():
            m, mod = statistics.median(ms), statistics.median(mods)
            n += 1
            within = abs(mod / m - 1) <= 0.2
            ok += within
            if v == "after":
                rows_after.append((cfg, k[0], k[1], m, mod, within))
        tot[v][0] += ok
        tot[v][1] += n
        cells.append(f"{ok}/{n}")
    print(f"| {cfg} | " + " | ".join(cells) + " |")
print(f"| all | {tot['before'][0]}/{tot['before'][1]} | {tot['after'][0]}/{tot['after'][1]} |")

print()
print("Communication rows of the op check, after (median over runs; ** outside 20 %):")
print()
print("| config | phase | kind | measured (µs) | modeled (µs) | modeled / measured |")
print("|---|---|---|---|---|---|")
for cfg, ph, kind, m, mod, within in rows_after:
    if kind in ("all_reduce", "all_gather", "recv", "send"):
        print(f"| {cfg} | {ph} | {kind} | {m*1e6:.1f} | {mod*1e6:.1f} | {mod/m:.2f}{'' if within else ' **'} |")
