#!/usr/bin/env python3
"""turnoff.py NOTES.md...: from calibrate's notes (the lines `grep` kept in each
pass's notes.md), per calibration and rank count the time off the core per turn
(each band: median time on the core, mean off it, in µs) and how the hand-ons
between turns were ordered (receiver first, the Send call's median and mean)."""
import re
import sys

band = re.compile(r"turns of ([0-9.e+-]+) s on the core \(median; (\d+) turns\): ([0-9.e+-]+) s off it median, ([0-9.e+-]+) s mean")
order = re.compile(r"receiver returned before the sender's Send call in (\d+) of (\d+) hand-ons \((\d+) %\); the Send call ([0-9.e+-]+) s median, ([0-9.e+-]+) s mean")
at = re.compile(r"at (\d+) process ranks")
rnd = re.compile(r"^round (\d+):")

print("| notes | round | ranks | turn on the core (µs, band median): mean off it (µs) | receiver first | Send call p50 / mean (µs) |")
print("|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    rows = {}
    for line in open(path):
        r = rnd.match(line)
        key = (r.group(1) if r else "-", at.search(line).group(1))
        row = rows.setdefault(key, {})
        if "time off the core per turn" in line:
            row["off"] = "; ".join(f"{float(m[0])*1e6:.0f}: {float(m[3])*1e6:.1f}" for m in band.findall(line))
        o = order.search(line)
        if o:
            row["order"] = f"{o.group(3)} % of {o.group(2)}"
            row["call"] = f"{float(o.group(4))*1e6:.1f} / {float(o.group(5))*1e6:.1f}"
    for (r, n), row in rows.items():
        print(f"| {path} | {r} | {n} | {row.get('off', '')} | {row.get('order', '')} | {row.get('call', '')} |")
