#!/usr/bin/env python3
"""The core wait priced four ways from the same calibrations, against the same runs: each pass's
after-N.toml (15 repeats per core_wait entry, listed in its note "core wait repeats at N ranks ...")
rewritten so that every core_wait entry holds (a) the median of its 15 repeats (the profile as
written), (b) the median of the first 5 (first-repeats.py: calibrate's repeat count before), (c) the
median of the repeats of the majority state, (d) of the upper state — the repeats of a placement split
in two by a 1-D two-means on each repeat's W summed in logs over the four bursts (W floored at 1 µs) —
then priced by one partbench (model --dry-run) for tp2-tiny, tp2pp2-tiny and tp2-dp2-tiny, against
the pass's six runs (the median of their p50, as summarize.py). Error = (median over the three
calibrations − measured) / measured.

Usage: reprice-states.py PARTBENCH WORKDIR...
"""
import csv
import io
import json
import math
import os
import re
import statistics as st
import subprocess
import sys
import tempfile
import tomllib

CFGS = [("tp2-tiny.toml", "tp2-tiny"), ("test/tp2pp2-tiny", "tp2pp2-tiny"), ("test/tp2-dp2-tiny", "tp2-dp2-tiny")]
NO_WAIT_S = 1e-9


def split(scores):
    xs = sorted((s, i) for i, s in enumerate(scores))
    best = None
    for c in range(1, len(xs)):
        a, b = [x for x, _ in xs[:c]], [x for x, _ in xs[c:]]
        ss = sum((x - st.mean(a)) ** 2 for x in a) + sum((x - st.mean(b)) ** 2 for x in b)
        if best is None or ss < best[0]:
            best = (ss, c)
    return {i for _, i in xs[best[1]:]}


def variants(text):
    """(name → {(ranks, size): W in s}) for every core_wait entry listed in the notes."""
    out = {"median of 15": {}, "first 5": {}, "majority state": {}, "upper state": {}}
    for note in tomllib.loads(text)["calibration"]["notes"]:
        m = re.match(r"core wait repeats at (\d+) ranks on (\d+) cores, .*? in ns\): (.*)$", note)
        if not m:
            continue
        n = int(m.group(1))
        entries = [(int(p.split(": ")[0].removeprefix("size ")), [float(v) * 1e-6 for v in p.split(": ")[1].split()])
                   for p in m.group(3).split("; ")]
        R = len(entries[0][1])
        up = split([sum(math.log(max(vals[r], 1e-6)) for _, vals in entries) for r in range(R)])
        maj = up if len(up) > R - len(up) else set(range(R)) - up
        for size, vals in entries:
            out["median of 15"][(n, size)] = st.median(vals)
            out["first 5"][(n, size)] = st.median(vals[:5])
            out["majority state"][(n, size)] = st.median([vals[r] for r in maj])
            out["upper state"][(n, size)] = st.median([vals[r] for r in up])
    return out


def rewrite(text, ws):
    parts = re.split(r"(?m)^(?=\[)", text)
    for i, p in enumerate(parts):
        if p.startswith("[[op_time]]") and re.search(r'(?m)^kind = "core_wait"$', p):
            key = (int(re.search(r"(?m)^ranks = (\d+)", p).group(1)), int(re.search(r"(?m)^size = (\d+)", p).group(1)))
            if key in ws:
                v = max(ws[key], NO_WAIT_S)
                lo = min(float(re.search(r"(?m)^time_min_s = (.*)$", p).group(1)), v)
                hi = max(float(re.search(r"(?m)^time_max_s = (.*)$", p).group(1)), v)
                for f, x in (("time_s", v), ("time_min_s", lo), ("time_max_s", hi)):
                    p = re.sub(rf"(?m)^{f} = .*$", f"{f} = {x!r}", p)
                parts[i] = p
    return "".join(parts)


def price(b, cfg, toml, cwd):
    out = subprocess.run([b, "model", "--dry-run", "--config", cfg, "--calibration", toml, "--format", "csv"],
                         capture_output=True, text=True, cwd=cwd, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    ttft = float(next(r for r in rows if r["phase"] == "prefill" and not r["rank"])["ttft_s"])
    tpot = float(next(r for r in rows if r["phase"] == "decode" and not r["rank"])["tpot_s"])
    return ttft, tpot


b = sys.argv[1]
names = ["median of 15", "first 5", "majority state", "upper state"]
print("| pass | config | metric | measured (ms) | " + " | ".join(f"{n}: modeled per calibration (ms) | error" for n in names) + " |")
print("|---|---|---|---|" + "---|---|" * len(names))
tmp = tempfile.mkdtemp(prefix="cpuwait-reprice-")
for w in sys.argv[2:]:
    profiles = {n: [] for n in names}
    for r in (1, 2, 3):
        text = open(f"{w}/after-{r}.toml").read()
        for n, ws in variants(text).items():
            p = os.path.join(tmp, f"{os.path.basename(w.rstrip('/'))}-{r}-{n.replace(' ', '_')}.toml")
            open(p, "w").write(rewrite(text, ws))
            profiles[n].append(p)
    for cfg, name in CFGS:
        meas = {"TTFT": [], "TPOT": []}
        for v in ("after", "before"):
            for r in (1, 2, 3):
                m = json.load(open(f"{w}/out/{v}/{name}-{r}/results.json"))["measurement"]
                meas["TTFT"].append(m["ttft_s"]["p50"])
                meas["TPOT"].append(m["tpot_s"]["p50"])
        mod = {n: [price(b, cfg, p, w) for p in profiles[n]] for n in names}
        for i, metric in enumerate(("TTFT", "TPOT")):
            y = st.median(meas[metric])
            cells = []
            for n in names:
                xs = [p[i] for p in mod[n]]
                cells.append(" / ".join(f"{x * 1e3:.3g}" for x in xs) + f" | {(st.median(xs) - y) / y * 100:+.1f} %")
            print(f"| {os.path.basename(w.rstrip('/'))} | {name} | {metric} | {y * 1e3:.3g} | " + " | ".join(cells) + " |")
