#!/usr/bin/env python3
"""tp2-tiny priced from each pass's profiles with the 2-rank core_wait entries (2 ranks on 2 cores: a core
each) at the median of their repeats (as main's calibrate writes them), at the least repeat and at the least of the
first 5 (the seventeenth's profiles hold 15 repeats, calibrate's default is 5), against the
pass's runs (median of six runs' p50). Usage: reprice-min.py PARTBENCH WORKDIR..."""
import json, os, re, statistics as st, sys, tempfile, tomllib, subprocess, csv, io
NO_WAIT_S = 1e-9
def reps(text):
    out = {}
    for note in tomllib.loads(text)["calibration"]["notes"]:
        m = re.match(r"core wait repeats at (\d+) ranks on (\d+) cores, .*? in ns\): (.*)$", note)
        if not m or int(m.group(1)) > int(m.group(2)):
            continue
        for p in m.group(3).split("; "):
            s, v = p.split(": ")
            out[(int(m.group(1)), int(s.removeprefix("size ")))] = [float(x) * 1e-6 for x in v.split()]
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
    out = subprocess.run([b, "model", "--dry-run", "--config", cfg, "--calibration", toml, "--format", "csv"], capture_output=True, text=True, cwd=cwd, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    return (float(next(r for r in rows if r["phase"] == "prefill" and not r["rank"])["ttft_s"]),
            float(next(r for r in rows if r["phase"] == "decode" and not r["rank"])["tpot_s"]))
b = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="cpuwait2-rp-")
print("| pass | round | 2-rank W after each burst (µs): median / least / least of the first 5 | tp2-tiny TTFT modeled (ms): median / least / least of first 5 | TPOT modeled (ms): median / least / least of first 5 | runs TTFT / TPOT (ms, median of 6) |")
print("|---|---|---|---|---|---|")
for w in sys.argv[2:]:
    meas = {"t": [], "p": []}
    for v in ("after", "before"):
        for r in (1, 2, 3):
            m = json.load(open(f"{w}/out/{v}/tp2-tiny-{r}/results.json"))["measurement"]
            meas["t"].append(m["ttft_s"]["p50"]); meas["p"].append(m["tpot_s"]["p50"])
    mt, mp = st.median(meas["t"]), st.median(meas["p"])
    for r in (1, 2, 3):
        text = open(f"{w}/after-{r}.toml").read()
        rp = reps(text)
        res = {}
        for name, f in (("median", st.median), ("least", min), ("least5", lambda v: min(v[:5]))):
            ws = {k: f(v) for k, v in rp.items()}
            p = os.path.join(tmp, f"{r}-{name}-{abs(hash(w))}.toml")
            open(p, "w").write(rewrite(text, ws))
            res[name] = price(b, "tp2-tiny.toml", p, w)
        wl = ", ".join(f"{k[1]/1e3:.0f}: {st.median(v)*1e6:.1f} / {min(v)*1e6:.1f} / {min(v[:5])*1e6:.1f}" for k, v in sorted(rp.items()))
        e = lambda x, y: f"{x*1e3:.3f} ({(x-y)/y*100:+.0f} %)"
        print(f"| {w} | {r} | {wl} | " + " / ".join(e(res[n][0], mt) for n in ("median", "least", "least5")) + " | " + " / ".join(e(res[n][1], mp) for n in ("median", "least", "least5")) + f" | {mt*1e3:.3f} / {mp*1e3:.3f} |")
