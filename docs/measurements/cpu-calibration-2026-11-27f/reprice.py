#!/usr/bin/env python3
"""Each pass's three calibrations priced by two partbench binaries (model --dry-run), against
the pass's runs (the median of six runs' p50, as summarize.py): tp2-dp2-tiny (and every other
test config, to see what else a pricing change moves) TTFT and TPOT, error = (modeled −
measured) / measured of the median over the three calibrations.

Usage: reprice.py BEFORE_BIN AFTER_BIN WORKDIR...
"""
import csv
import io
import json
import statistics as st
import subprocess
import sys

CFGS = [("test/single-tiny", "single-tiny"), ("tp2-tiny.toml", "tp2-tiny"), ("pp2-tiny.toml", "pp2-tiny"),
        ("test/tp2pp2-tiny", "tp2pp2-tiny"), ("test/tp2-dp2-tiny", "tp2-dp2-tiny"),
        ("test/layerwise16-tiny", "layerwise16-tiny")]


def price(b, cfg, toml, cwd):
    out = subprocess.run([b, "model", "--dry-run", "--config", cfg, "--calibration", toml, "--format", "csv"],
                         capture_output=True, text=True, cwd=cwd, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    ttft = float(next(r for r in rows if r["phase"] == "prefill" and not r["rank"])["ttft_s"])
    tpot = float(next(r for r in rows if r["phase"] == "decode" and not r["rank"])["tpot_s"])
    return ttft, tpot


before, after = sys.argv[1], sys.argv[2]
print("| pass | config | metric | measured (ms) | before: modeled per calibration (ms) | error | after | error |")
print("|---|---|---|---|---|---|---|---|")
for w in sys.argv[3:]:
    for cfg, name in CFGS:
        meas = {"TTFT": [], "TPOT": []}
        for v in ("after", "before"):
            for r in (1, 2, 3):
                m = json.load(open(f"{w}/out/{v}/{name}-{r}/results.json"))["measurement"]
                meas["TTFT"].append(m["ttft_s"]["p50"])
                meas["TPOT"].append(m["tpot_s"]["p50"])
        mod = {b: [price(b, cfg, f"after-{r}.toml", w) for r in (1, 2, 3)] for b in (before, after)}
        for i, metric in enumerate(("TTFT", "TPOT")):
            y = st.median(meas[metric])
            cells = []
            for b in (before, after):
                xs = [p[i] for p in mod[b]]
                cells.append(" / ".join(f"{x * 1e3:.3g}" for x in xs) + f" | {(st.median(xs) - y) / y * 100:+.1f} %")
            print(f"| {w} | {name} | {metric} | {y * 1e3:.3g} | " + " | ".join(cells) + " |")
