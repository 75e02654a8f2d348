#!/usr/bin/env python3
"""How far each variant's calibrations move the model: every calibration of the passes
(WORKDIR/{before,after}-N.toml, run.sh own mode) priced by one partbench binary (the pricing the
same for all), per config its modeled TTFT and TPOT (ms) per calibration, and per variant the
spread over its calibrations (min–max, and max / min); with the 4-rank core_wait entry after the
shortest burst (µs per step: median (min–max over its repeats)).

Usage: swing.py PARTBENCH WORKDIR...
"""
import glob
import os
import subprocess
import sys
import tomllib

CONFIGS = ("test/tp2pp2-tiny", "test/tp2-dp2-tiny", "tp2-tiny.toml", "pp2-tiny.toml")


def price(b, cfg, toml, cwd):
    out = subprocess.run([b, "model", "--dry-run", "--config", cfg, "--calibration", toml, "--format", "csv"],
                         capture_output=True, text=True, cwd=cwd).stdout
    ttft = tpot = float("nan")
    for line in out.splitlines():
        f = line.split(",")
        if len(f) > 8 and f[2] == "" and f[1] == "prefill":
            ttft = float(f[7]) * 1e3
        if len(f) > 8 and f[2] == "" and f[1] == "decode":
            tpot = float(f[8]) * 1e3
    return ttft, tpot


def short_wait(toml):
    with open(toml, "rb") as f:
        ots = tomllib.load(f).get("op_time", [])
    ws = sorted((e["size"], e) for e in ots if e["kind"] == "core_wait" and e.get("ranks") == 4)
    if not ws:
        return "—"
    e = ws[0][1]
    return f"{e['time_s'] * 1e6:.1f} ({e['time_min_s'] * 1e6:.1f}–{e['time_max_s'] * 1e6:.1f}, {e['samples']} repeats)"


b = sys.argv[1]
per = {}
print("| pass | calibration | core_wait at 4 ranks, shortest burst | " + " | ".join(f"{c} TTFT / TPOT" for c in CONFIGS) + " |")
print("|---|---|---|" + "---|" * len(CONFIGS))
for w in sys.argv[2:]:
    for toml in sorted(glob.glob(os.path.join(w, "*-[0-9].toml"))):
        v = os.path.basename(toml).split("-")[0]
        cells = []
        for c in CONFIGS:
            t, p = price(b, c, toml, w)
            per.setdefault((v, c), []).append((t, p))
            cells.append(f"{t:.3f} / {p:.3f}")
        print(f"| {os.path.basename(w)} | {os.path.basename(toml)} | {short_wait(toml)} | " + " | ".join(cells) + " |")
print()
print("| variant | config | calibrations | TTFT min–max (max/min) | TPOT min–max (max/min) |")
print("|---|---|---|---|---|")
for (v, c), xs in sorted(per.items()):
    ts, ps = [x[0] for x in xs], [x[1] for x in xs]
    print(f"| {v} | {c} | {len(xs)} | {min(ts):.3f}–{max(ts):.3f} ({max(ts) / min(ts):.2f}) | "
          f"{min(ps):.3f}–{max(ps):.3f} ({max(ps) / min(ps):.2f}) |")
