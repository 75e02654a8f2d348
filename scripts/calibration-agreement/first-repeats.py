#!/usr/bin/env python3
"""Reads a calibration profile on stdin and writes it with each core_wait entry priced from its first K
repeats only (K = argv[1], default 5): the median, least and greatest of the first K values its note
"core wait repeats at N ranks on C cores, ..." lists for the entry (kind core_wait, shape cores=C,
ranks N, size S), a zero kept as 1 ns as calibrate keeps it — the profile a calibrate of K repeats would
have written from the first K of the same repeats (the loops interleave their repeats, so the first K
span the first part of the measurement). run.sh's BEFORE_FILTER where "after" calibrated with more
repeats (docs/measurements/cpu-calibration.md, (seventeenth): its core-wait loops at three times
calibrate's repeats, 15 against 5, tried and not kept); a profile
without such notes passes unchanged."""
import re
import statistics
import sys
import tomllib

K = int(sys.argv[1]) if len(sys.argv) > 1 else 5
NO_WAIT_S = 1e-9
text = sys.stdin.read()
notes = tomllib.loads(text).get("calibration", {}).get("notes", [])
first = {}  # (ranks, cores, size) -> first K values in s
for n in notes:
    m = re.match(r"core wait repeats at (\d+) ranks on (\d+) cores, .*? in ns\): (.*)$", n)
    if not m:
        continue
    for part in m.group(3).split("; "):
        size, vals = part.split(": ")
        vals = [float(v) * 1e-6 for v in vals.split()][:K]
        first[(int(m.group(1)), int(m.group(2)), int(size.removeprefix("size ")))] = vals


def field(block, name):
    m = re.search(rf'(?m)^{name} = "?([^"\n]*)"?$', block)
    return m.group(1) if m else None


parts = re.split(r"(?m)^(?=\[)", text)
out, done = [], 0
for p in parts:
    if p.startswith("[[op_time]]") and field(p, "kind") == "core_wait":
        key = (int(field(p, "ranks")), int(field(p, "shape").removeprefix("cores=")), int(field(p, "size")))
        if key in first:
            vals = first[key]
            med, lo, hi = statistics.median(vals), min(vals), max(vals)
            if not max(vals) > 0:
                med = lo = hi = NO_WAIT_S
            for name, v in (("time_s", max(med, NO_WAIT_S)), ("time_min_s", max(lo, NO_WAIT_S)), ("time_max_s", max(hi, NO_WAIT_S))):
                p = re.sub(rf"(?m)^{name} = .*$", f"{name} = {v!r}", p)
            p = re.sub(r"(?m)^samples = .*$", f"samples = {len(vals)}", p)
            done += 1
    out.append(p)
if first and done != len(first):
    sys.exit(f"first-repeats.py: {len(first)} core_wait entries listed in the notes, {done} found in the profile")
sys.stdout.write("".join(out))
