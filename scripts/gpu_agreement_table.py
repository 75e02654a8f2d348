#!/usr/bin/env python3
"""gpu_agreement_table.py OUTDIR — gpu-check's agreement step in one table.

Reads OUTDIR/agree-*/results.json (written by `partbench run --output-dir`: a
run's has a "comparison", an emulation's "emulated" and "modeled" estimates)
and prints, per config, TTFT, TPOT and TPS measured (or emulated) over the
calibrated model, and the error of the model against it, (model − measured) /
measured, as `run` prints it: a markdown table, then which configs are within
10 % on all three. A run's figures are medians (p50); an emulation's are its
rebuilt timeline's. Standard library only.
"""
import glob
import json
import os
import sys


def run_row(d):
    out = {}
    for c in d.get("comparison", []):
        if c.get("metric") in ("ttft", "tpot", "tps"):
            meas = c["measured"]["p50"]
            out[c["metric"]] = (meas, c["modeled"])
    return "run", out


def emulation_row(d):
    e, m = d["emulated"], d["modeled"]
    return "emulated", {
        "ttft": (e["prefill"]["ttft_s"], m["prefill"]["ttft_s"]),
        "tpot": (e["decode"]["tpot_s"], m["decode"]["tpot_s"]),
        "tps": (e["decode"]["tokens_per_s"], m["decode"]["tokens_per_s"]),
    }


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_agreement_table.py OUTDIR", file=sys.stderr)
        return 2
    paths = sorted(glob.glob(os.path.join(argv[1], "agree-*", "results.json")))
    if not paths:
        print("gpu_agreement_table.py: no %s/agree-*/results.json" % argv[1], file=sys.stderr)
        return 1
    print("| config | how | TTFT model err | TPOT model err | TPS model err |")
    print("|---|---|---|---|---|")
    within = []
    for p in paths:
        name = os.path.basename(os.path.dirname(p))[len("agree-"):]
        with open(p) as f:
            d = json.load(f)
        how, figs = emulation_row(d) if "emulated" in d else run_row(d)
        cells, ok = [], True
        for k in ("ttft", "tpot", "tps"):
            if k not in figs or not figs[k][0]:
                cells.append("—")
                ok = False
                continue
            meas, model = figs[k]
            err = (model - meas) / meas
            ok = ok and abs(err) <= 0.10
            cells.append("%+.1f %%" % (100 * err))
        if ok:
            within.append(name)
        print("| %s | %s | %s |" % (name, how, " | ".join(cells)))
    print()
    print("within 10 %% on TTFT, TPOT and TPS: %d of %d (%s)" % (len(within), len(paths), ", ".join(within) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
