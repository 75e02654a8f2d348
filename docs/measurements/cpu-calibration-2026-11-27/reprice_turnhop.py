#!/usr/bin/env python3
"""Price each config from a pass's three profiles as written and with their receive-wait entries
replaced by the hand-off between turns (the calibration's note): at each rank count n > cores, one
entry per pass band, size = the band's median pass (ns), time = the band's mean hop less the send
entry's one-way time at 1 KiB among n. Usage: reprice_turnhop.py BIN WORKDIR"""
import json, glob, re, subprocess, sys, statistics, tomllib
B, W = sys.argv[1], sys.argv[2]
import os
ONLY = [int(x) for x in os.environ.get("ONLY", "").split(",") if x]  # rank counts to replace (all if unset)
def price(cfg, cal):
    r = subprocess.run([B, "model", "--dry-run", "--config", cfg, "--calibration", cal, "--format", "csv"], capture_output=True, text=True)
    ttft = tpot = None
    for l in r.stdout.splitlines():
        f = l.split(',')
        if len(f) > 8 and f[1] == 'prefill' and f[2] == '': ttft = float(f[7])
        if len(f) > 8 and f[1] == 'decode' and f[2] == '': tpot = float(f[8])
    return ttft, tpot
def variant(r):
    src = open(f"{W}/after-{r}.toml").read()
    d = tomllib.loads(src)
    notes = " ".join(d.get("calibration", {}).get("notes", [])) if isinstance(d.get("calibration"), dict) else src
    md = open(f"{W}/calibrate-after-{r}.md").read()
    out = [l for l in src.split("\n")]
    # drop recv_wait entries at the counts the turns measured, append the turn-hop ones
    blocks = src.split("[[op_time]]")
    keep = [blocks[0]]
    counts = {}
    for m in re.finditer(r"hand-off between turns at (\d+) process ranks.*?: (after passes.*)", md):
        n = int(m.group(1))
        if ONLY and n not in ONLY: continue
        bands = re.findall(r"after passes of ([0-9.e+-]+) s \(median; (\d+) hops\): ([0-9.e+-]+) s median, ([0-9.e+-]+) s mean", m.group(2))
        counts[n] = [(float(p), float(mean)) for p, _, _, mean in bands]
    oneway = {}
    for e in d["op_time"]:
        if e["kind"] == "send" and e["size"] == 1024: oneway[e["ranks"]] = e["time_s"]
    for b in blocks[1:]:
        if 'kind = "recv_wait"' in b:
            rk = int(re.search(r"ranks = (\d+)", b).group(1))
            if rk in counts: continue
        keep.append(b)
    text = "[[op_time]]".join(keep)
    for n, bands in counts.items():
        seen = set()
        for p, mean in bands:
            size = int(round(p * 1e9))
            while size in seen: size += 1
            seen.add(size)
            w = max(1e-9, mean - oneway.get(n, 0))
            text += f'\n[[op_time]]\nkind = "recv_wait"\nshape = "cores=2"\nsize = {size}\ntime_s = {w}\ntime_min_s = {w}\ntime_max_s = {w}\nsamples = 1\nranks = {n}\n'
    path = f"/tmp/cal8/rp/turnhop-{r}.toml"
    open(path, "w").write(text)
    return path, counts, oneway
names = {"single-tiny": "test/single-tiny", "tp2-tiny": f"{W}/tp2-tiny.toml", "pp2-tiny": f"{W}/pp2-tiny.toml",
         "tp2pp2-tiny": "test/tp2pp2-tiny", "tp2-dp2-tiny": "test/tp2-dp2-tiny", "layerwise16-tiny": "test/layerwise16-tiny"}
vs = [variant(r) for r in (1, 2, 3)]
for r, (p, c, o) in enumerate(vs, 1):
    print(f"calibration {r}: turn hops (pass s, mean hop s) {c}; one-way at 1 KiB {o}", file=sys.stderr)
print("| config | metric | measured (median of 6 runs' p50) | as written: modeled (median of 3), error | recv_wait from the turns' hand-off |")
print("|---|---|---|---|---|")
for n, cfg in names.items():
    meas = {"ttft": [], "tpot": []}
    for f in glob.glob(f"{W}/out/*/{n}-*/results.json"):
        m = json.load(open(f))["measurement"]; meas["ttft"].append(m["ttft_s"]["p50"]); meas["tpot"].append(m["tpot_s"]["p50"])
    a = [price(cfg, f"{W}/after-{r}.toml") for r in (1, 2, 3)]
    b = [price(cfg, vs[r-1][0]) for r in (1, 2, 3)]
    for i, k in enumerate(("ttft", "tpot")):
        mm = statistics.median(meas[k]); ma = statistics.median(x[i] for x in a); mb = statistics.median(x[i] for x in b)
        print(f"| {n} | {k.upper()} | {mm*1e3:.3g} ms | {ma*1e3:.3g} ms, {100*(ma/mm-1):+.1f} % | {mb*1e3:.3g} ms, {100*(mb/mm-1):+.1f} % |")
