"""tp2pp2-tiny per round of run.sh's shared mode: both binaries' runs (the same executor and
binding) against the round's profile priced with the partner behind (before's model) and without
it (after's), each run's p50, ms.

Usage: rounds.py WORKDIR
"""
import json, sys

def rows(o):
    if isinstance(o, dict):
        if isinstance(o.get("measured"), dict) and "p50" in o["measured"] and "modeled" in o:
            yield o
        for x in o.values():
            yield from rows(x)
    elif isinstance(o, list):
        for x in o:
            yield from rows(x)

W = sys.argv[1]
print("| round | metric | runs (before's, after's) | with the partner behind | error | without | error |")
print("|---|---|---|---|---|---|---|")
for r in (1, 2, 3):
    got = {}
    for v in ("before", "after"):
        got[v] = list(rows(json.load(open(f"{W}/out/{v}/tp2pp2-tiny-{r}/results.json"))))[:2]
    for i, m in enumerate(("TTFT", "TPOT")):
        runs = [got[v][i]["measured"]["p50"] * 1e3 for v in ("before", "after")]
        wth, wo = got["before"][i]["modeled"] * 1e3, got["after"][i]["modeled"] * 1e3
        err = lambda mod: " / ".join(f"{(mod - x) / x * 100:+.1f} %" for x in runs)
        print(f"| {r} | {m} | {runs[0]:.3f}, {runs[1]:.3f} | {wth:.3f} | {err(wth)} | {wo:.3f} | {err(wo)} |")
