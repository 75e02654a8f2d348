#!/usr/bin/env python3
"""Price each config from each round's after-N.toml of a run.sh WORKDIR with
several binaries (name=path ...), against the measured p50s of every run of
the pass (both variants' runs). Usage: reprice2.py WORKDIR name=path..."""
import json, subprocess, sys, statistics, glob
W = sys.argv[1]
BINS = [a.split('=', 1) for a in sys.argv[2:]]
CFG = {"single-tiny": "test/single-tiny", "tp2-tiny": W + "/tp2-tiny.toml", "pp2-tiny": W + "/pp2-tiny.toml",
       "tp2pp2-tiny": "test/tp2pp2-tiny", "tp2-dp2-tiny": "test/tp2-dp2-tiny", "layerwise16-tiny": "test/layerwise16-tiny"}
def price(b, cfg, cal):
    r = subprocess.run([b, "model", "--dry-run", "--config", cfg, "--calibration", cal, "--format", "csv"], capture_output=True, text=True)
    ttft = tpot = None
    for l in r.stdout.splitlines():
        f = l.split(',')
        if len(f) > 8 and f[1] == 'prefill' and f[2] == '': ttft = float(f[7])
        if len(f) > 8 and f[1] == 'decode' and f[2] == '': tpot = float(f[8])
    return ttft, tpot
print("| config | metric | measured (median of 6 runs) | " + " | ".join(f"{n}: modeled (median of 3 rounds), error" for n, _ in BINS) + " | per round " + " → ".join(n for n, _ in BINS) + " |")
print("|---|---|---|" + "---|" * (len(BINS) + 1))
for name, cfg in CFG.items():
    meas = {"ttft": [], "tpot": []}
    for f in glob.glob(f"{W}/out/*/{name}-*/results.json"):
        d = json.load(open(f))["measurement"]
        meas["ttft"].append(d["ttft_s"]["p50"]); meas["tpot"].append(d["tpot_s"]["p50"])
    rounds = {n: [price(b, cfg, f"{W}/after-{r}.toml") for r in (1, 2, 3)] for n, b in BINS}
    for i, m in enumerate(("ttft", "tpot")):
        mm = statistics.median(meas[m])
        cells = []
        for n, _ in BINS:
            v = statistics.median([x[i] for x in rounds[n]])
            cells.append(f"{v*1e3:.3g}, {(v/mm-1)*100:+.1f} %")
        per = "; ".join(" → ".join(f"{rounds[n][r][i]*1e3:.3g}" for n, _ in BINS) for r in range(3))
        print(f"| {name} | {m.upper()} (ms) | {mm*1e3:.3g} | " + " | ".join(cells) + f" | {per} |")
