#!/usr/bin/env python3
"""The all_gather in a pass of run.sh: per config, phase and communication kind the op check's
measured time pooled over both variants' runs (median) against each variant's modeled time (median
over its runs), their ratio and how each variant priced it (table ops / link-model ops per rank and
pass); then, per calibration, the all_gather's link samples at the Programs' payloads (768 B over 2
ranks, 1536 B over 4) measured against the fitted link's model of them, at every placement.
Usage: gather_rows.py WORKDIR (the folder run.sh filled)"""
import json, os, statistics, sys, tomllib

W = sys.argv[1]
CONFIGS = ["tp2-tiny", "tp2pp2-tiny", "tp2-dp2-tiny"]
KINDS = ("all_gather", "all_reduce")


def runs(variant, cfg):
    for i in (1, 2, 3):
        p = os.path.join(W, "out", variant, f"{cfg}-{i}", "results.json")
        if os.path.exists(p):
            yield json.load(open(p))


print("| config | phase | kind | measured (µs, pooled) | before: modeled | ratio | priced (table/link) | after: modeled | ratio | priced |")
print("|---|---|---|---|---|---|---|---|---|---|")
for cfg in CONFIGS:
    meas, mod, how = {}, {"before": {}, "after": {}}, {"before": {}, "after": {}}
    for v in ("before", "after"):
        for d in runs(v, cfg):
            for r in d.get("op_check") or []:
                if r["kind"] not in KINDS or r.get("measured_s", 0) <= 0:
                    continue
                k = (r["phase"], r["kind"])
                meas.setdefault(k, []).append(r["measured_s"])
                mod[v].setdefault(k, []).append(r["modeled_s"])
                how[v][k] = f"{r.get('table_ops', 0)}/{r.get('roofline_ops', 0)}"
    for k in sorted(meas, key=lambda k: (k[0] != "prefill", k[1])):
        m = statistics.median(meas[k])
        cells = []
        for v in ("before", "after"):
            x = statistics.median(mod[v][k])
            cells += [f"{x*1e6:.2f}", f"{x/m:.2f}", how[v][k]]
        print(f"| {cfg} | {k[0]} | {k[1]} | {m*1e6:.2f} | " + " | ".join(cells) + " |")

print()
print("| calibration | placement (ranks) | op | group | bytes | measured median (µs) | fitted link's model (µs) | model / measured |")
print("|---|---|---|---|---|---|---|---|")
for r in (1, 2, 3):
    p = os.path.join(W, f"after-{r}.toml")
    if not os.path.exists(p):
        continue
    with open(p, "rb") as f:
        cal = tomllib.load(f)
    link = {(s["op"], s["ranks"], s["bytes"]): s for s in cal.get("comm", [])}
    for e in cal.get("op_time", []):
        if e["kind"] != "all_gather" or (e["shape"], e["size"]) not in (("ranks=2", 768), ("ranks=4", 1536)):
            continue
        g = int(e["shape"].split("=")[1])
        s = link.get(("all_gather", g, e["size"])) or link.get(("all_gather_pairs", g, e["size"]))
        model = f"{s['model_time_s']*1e6:.2f} | {s['model_time_s']/e['time_s']:.1f}" if s and e["ranks"] == cal["calibration"]["ranks"] else "— | —"
        print(f"| after-{r} | {e['ranks']} | all_gather | {g} | {e['size']} | {e['time_s']*1e6:.2f} | {model} |")
