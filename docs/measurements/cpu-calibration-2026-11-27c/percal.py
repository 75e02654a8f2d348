#!/usr/bin/env python3
"""Each calibration of the passes priced by two partbench binaries (before, after): tp2pp2-tiny's
and tp2-dp2-tiny's modeled TTFT and TPOT (ms), `partbench model --dry-run --calibration`.

Usage: percal.py BEFORE_BIN AFTER_BIN WORKDIR...
"""
import glob
import os
import subprocess
import sys


def price(b, cfg, toml):
    out = subprocess.run([b, "model", "--dry-run", "--config", cfg, "--calibration", toml, "--format", "csv"],
                         capture_output=True, text=True).stdout
    ttft = tpot = None
    for line in out.splitlines():
        f = line.split(",")
        if len(f) > 8 and f[2] == "" and f[1] == "prefill":
            ttft = float(f[7]) * 1e3
        if len(f) > 8 and f[2] == "" and f[1] == "decode":
            tpot = float(f[8]) * 1e3
    return ttft, tpot


before, after = sys.argv[1], sys.argv[2]
print("| pass | calibration | config | TTFT before → after (ms) | TPOT before → after (ms) |")
print("|---|---|---|---|---|")
for w in sys.argv[3:]:
    for toml in sorted(glob.glob(os.path.join(w, "after-*.toml"))):
        for cfg in ("test/tp2pp2-tiny", "test/tp2-dp2-tiny"):
            b, a = price(before, cfg, toml), price(after, cfg, toml)
            print(f"| {os.path.basename(w)} | {os.path.basename(toml)} | {cfg[5:]} | {b[0]:.3f} → {a[0]:.3f} | {b[1]:.3f} → {a[1]:.3f} |")
