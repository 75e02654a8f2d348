#!/usr/bin/env python3
"""Per round of a run.sh pass (shared mode): the 2-rank core wait repeats after each burst (the note
"core wait repeats at 2 ranks on 2 cores ..." of after-N.toml), the entry each variant priced
(after-N.toml's time_s; before-N.toml's where BEFORE_FILTER rebuilt it), tp2-tiny's modeled TTFT and
TPOT by each variant (its results.json) and the round's two runs' p50.

Usage: rounds-tp2.py WORKDIR"""
import json, os, re, sys, tomllib
W = sys.argv[1]
def entries(path):
    cal = tomllib.load(open(path, "rb"))
    return {e["size"]: e["time_s"] for e in cal.get("op_time", []) if e.get("kind") == "core_wait" and e.get("ranks") == 2}
def repeats(path):
    for n in tomllib.load(open(path, "rb"))["calibration"]["notes"]:
        m = re.match(r"core wait repeats at 2 ranks on 2 cores, .*? in ns\): (.*)$", n)
        if m:
            return m.group(1)
    return ""
def metric(v, r):
    d = json.load(open(f"{W}/out/{v}/tp2-tiny-{r}/results.json"))
    m = {c["metric"]: c for c in d["comparison"]}
    return m["ttft"]["measured"]["p50"], m["ttft"]["modeled"], m["tpot"]["measured"]["p50"], m["tpot"]["modeled"]
print("| round | 2-rank W repeats (µs, per entry by burst wall ns) | entry after / before (µs, by burst) | TTFT modeled after / before (ms) | runs' TTFT p50 after, before run (ms) | TPOT modeled after / before | runs' TPOT p50 |")
print("|---|---|---|---|---|---|---|")
for r in (1, 2, 3):
    a = entries(f"{W}/after-{r}.toml")
    bp = f"{W}/before-{r}.toml"
    b = entries(bp) if os.path.exists(bp) else a
    ent = ", ".join(f"{s/1e3:.0f}: {a[s]*1e6:.1f} / {b.get(s, 0)*1e6:.1f}" for s in sorted(a))
    ma, mb = metric("after", r), metric("before", r)
    print(f"| {r} | {repeats(f'{W}/after-{r}.toml')} | {ent} | {ma[1]*1e3:.3f} / {mb[1]*1e3:.3f} | {ma[0]*1e3:.3f}, {mb[0]*1e3:.3f} | {ma[3]*1e3:.3f} / {mb[3]*1e3:.3f} | {ma[2]*1e3:.3f}, {mb[2]*1e3:.3f} |")
