#!/usr/bin/env python3
"""Per variant: each variant's own runs' measured p50 (median over its three rounds) against its
own modeled (median over rounds); error = (modeled - measured) / measured. Usage: pervariant.py WORKDIR..."""
import json, statistics as st, sys
CONFIGS = ["single-tiny", "tp2-tiny", "pp2-tiny", "tp2pp2-tiny", "tp2-dp2-tiny", "layerwise16-tiny"]
def metric(d, name):
    for c in d["comparison"]:
        if c["metric"].lower().startswith(name):
            return c["measured"]["p50"], c["modeled"]
print("| pass | config | metric | before: measured (runs) | modeled | error | after: measured (runs) | modeled | error |")
print("|---|---|---|---|---|---|---|---|---|")
for W in sys.argv[1:]:
    for cfg in CONFIGS:
        for m, unit in (("ttft", 1e3), ("tpot", 1e3)):
            row = [W.rstrip('/').split('/')[-1], cfg, m.upper() + " (ms)"]
            for v in ("before", "after"):
                meas, mod = [], []
                for r in (1, 2, 3):
                    try:
                        d = json.load(open(f"{W}/out/{v}/{cfg}-{r}/results.json"))
                    except OSError:
                        continue
                    x, y = metric(d, m)
                    meas.append(x * unit); mod.append(y * unit)
                if not meas:
                    row += ["—", "—", "—"]; continue
                a, b = st.median(meas), st.median(mod)
                row += [f"{a:.3g} ({' / '.join(f'{x:.3g}' for x in meas)})", f"{b:.3g}", f"{(b - a) / a * 100:+.1f} %"]
            print("| " + " | ".join(row) + " |")
