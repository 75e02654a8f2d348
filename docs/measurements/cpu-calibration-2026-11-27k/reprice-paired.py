#!/usr/bin/env python3
"""The per-CPU count of the shared-core stretch (ranks bound two to a CPU) priced on a pass's own
after-N.toml profiles by PARTBENCH (model --dry-run), beside what the pass's after runs were
priced at (their results.json, the host-wide count), against the after runs (median of the
three runs' p50; a pricing change does not touch the runs). Per pass and config: modeled
median of three (each calibration's) and error, TTFT and TPOT.
With RUNS_LABEL and PRICED_LABEL set, the two columns are named so instead (passes 3-4, whose after
runs were priced per CPU, repriced host-wide by the binding-only binary).
Usage: reprice-paired.py PARTBENCH WORKDIR..."""
import csv, io, json, os, statistics as st, subprocess, sys

b = sys.argv[1]
CONFIGS = ["single-tiny", "tp2-tiny", "pp2-tiny", "tp2pp2-tiny", "tp2-dp2-tiny", "layerwise16-tiny"]
CFGARG = {"tp2-tiny": "tp2-tiny.toml", "pp2-tiny": "pp2-tiny.toml"}


def price(cfg, toml, cwd):
    out = subprocess.run([b, "model", "--dry-run", "--config", CFGARG.get(cfg, "test/" + cfg), "--calibration", toml, "--format", "csv"],
                         capture_output=True, text=True, cwd=cwd, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    return (float(next(r for r in rows if r["phase"] == "prefill" and not r["rank"])["ttft_s"]),
            float(next(r for r in rows if r["phase"] == "decode" and not r["rank"])["tpot_s"]))


def comp(d, name):
    c = next(c for c in d["comparison"] if c["metric"] == name)
    return c["measured"]["p50"], c["modeled"]


RL = os.environ.get("RUNS_LABEL", "host-wide count (the runs' model)")
PL = os.environ.get("PRICED_LABEL", "per-CPU count")
print(f"| pass | config | after runs: TTFT / TPOT (ms, median of 3) | {RL}: TTFT, TPOT (error) | {PL}: TTFT, TPOT (error) |")
print("|---|---|---|---|---|")
for w in sys.argv[2:]:
    for cfg in CONFIGS:
        runs = [json.load(open(f"{w}/out/after/{cfg}-{r}/results.json")) for r in (1, 2, 3)]
        mt = st.median(comp(d, "ttft")[0] for d in runs)
        mp = st.median(comp(d, "tpot")[0] for d in runs)
        ht = st.median(comp(d, "ttft")[1] for d in runs)
        hp = st.median(comp(d, "tpot")[1] for d in runs)
        pr = [price(cfg, f"after-{r}.toml", w) for r in (1, 2, 3)]
        pt, pp = st.median(x[0] for x in pr), st.median(x[1] for x in pr)
        e = lambda x, y: f"{x*1e3:.3f} ({(x-y)/y*100:+.1f} %)"
        print(f"| {w} | {cfg} | {mt*1e3:.3f} / {mp*1e3:.3f} | {e(ht, mt)}, {e(hp, mp)} | {e(pt, mt)}, {e(pp, mp)} |")
