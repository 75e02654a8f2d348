#!/usr/bin/env python3
"""Price each config of passes 1-4 (docs/measurements/cpu-calibration-2026-11-26k) from each of
the pass's six calibrations (before-N = main a54ff91, after-N = the branch) as stored and as
augment.py keeps the no-wait core_wait entries (calib/corewait.go at 0924748), against the
measured p50s of the pass's runs. Usage: reprice_nowait.py BIN [cal|calr]"""
import json, subprocess, sys, statistics, glob
B = sys.argv[1]
CAL = sys.argv[2] if len(sys.argv) > 2 else "cal"  # cal: core_wait kept; calr: and recv_wait
T = "/tmp/skew7"
def price(cfg, cal):
    r = subprocess.run([B, "model", "--dry-run", "--config", cfg, "--calibration", cal, "--format", "csv"], capture_output=True, text=True)
    ttft = tpot = None
    for l in r.stdout.splitlines():
        f = l.split(',')
        if len(f) > 8 and f[1] == 'prefill' and f[2] == '': ttft = float(f[7])
        if len(f) > 8 and f[1] == 'decode' and f[2] == '': tpot = float(f[8])
    return ttft, tpot
names = ["single-tiny", "tp2-tiny", "pp2-tiny", "tp2pp2-tiny", "tp2-dp2-tiny", "layerwise16-tiny"]
rows = {}
for p in (1, 2, 3, 4):
    W = f"{T}/p{p}"
    cfg = {"single-tiny": "test/single-tiny", "tp2-tiny": W + "/tp2-tiny.toml", "pp2-tiny": W + "/pp2-tiny.toml",
           "tp2pp2-tiny": "test/tp2pp2-tiny", "tp2-dp2-tiny": "test/tp2-dp2-tiny", "layerwise16-tiny": "test/layerwise16-tiny"}
    for n in names:
        meas = {"ttft": [], "tpot": []}
        for f in glob.glob(f"{W}/out/*/{n}-*/results.json"):
            d = json.load(open(f))["measurement"]
            meas["ttft"].append(d["ttft_s"]["p50"]); meas["tpot"].append(d["tpot_s"]["p50"])
        for v in ("before", "after"):
            for r in (1, 2, 3):
                o = price(cfg[n], f"{W}/{v}-{r}.toml")
                a = price(cfg[n], f"{T}/r2/{CAL}/p{p}-{v}-{r}.aug.toml")
                for i, m in enumerate(("ttft", "tpot")):
                    mm = statistics.median(meas[m])
                    rows.setdefault((n, m), []).append((p, v, r, mm, o[i], a[i]))
print("| config | metric | calibrations changed (of 24) | modeled/measured − 1, stored: median \\|err\\|, range | kept no-wait entries: median \\|err\\|, range | changed ones: stored → kept (pass-calibration: ms, measured ms) |")
print("|---|---|---|---|---|---|")
for (n, m), xs in rows.items():
    eo = [x[4] / x[3] - 1 for x in xs]; ea = [x[5] / x[3] - 1 for x in xs]
    ch = [x for x in xs if abs(x[4] - x[5]) > 1e-9 * max(1, abs(x[4])) and abs(x[4]-x[5]) > 1e-12]
    det = "; ".join(f"p{x[0]}-{x[1]}-{x[2]}: {x[4]*1e3:.3g} → {x[5]*1e3:.3g} ({x[3]*1e3:.3g})" for x in ch)
    f = lambda e: f"{statistics.median([abs(v) for v in e])*100:.1f} %, {min(e)*100:+.1f} … {max(e)*100:+.1f} %"
    print(f"| {n} | {m.upper()} | {len(ch)} | {f(eo)} | {f(ea)} | {det} |")
