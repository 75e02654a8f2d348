#!/usr/bin/env python3
"""Tabulate the placement series: per file, config and placement, the runs' TTFT p50, TPOT p50
and prefill all-reduce per call (ms, ms, µs): median (min-max) and each run's per call.
s1/s2s3/s4s5 lines are 'load JSON' or 'kind load JSON' (place.py); s6 lines
'round load config bind TTFT TPOT AR' (series3.sh). Usage: tab.py FILE..."""
import collections, json, statistics, sys

for fn in sys.argv[1:]:
    rows = collections.defaultdict(list)
    loads = []
    for line in open(fn):
        parts = line.split(" ", 2)
        if line.lstrip().startswith(("{",)) or "{" not in line:
            f = line.split()
            if len(f) == 7:  # series3.sh
                _, ld, cfg, b, tt, tp, ar = f
                rows[(cfg, "bind-to " + b, "")].append((float(tt), float(tp), None if ar == "-" else float(ar)))
                loads.append(float(ld))
            continue
        i = line.index("{")
        pre = line[:i].split()
        d = json.loads(line[i:])
        kind = pre[0] if len(pre) == 2 else ""
        loads.append(float(pre[-1]))
        rows[(d["cfg"].split("/")[-1], "pinned " + d["place"] if d["place"] != "none" else "unbound", kind)].append((d["ttft_ms"], d["tpot_ms"], d.get("ar_us")))
    print(f"### {fn} (1-minute load {min(loads):.1f}-{max(loads):.1f})\n")
    print("| config | placement | beside | runs | TTFT p50 ms, median (min-max) | TPOT p50 ms | prefill all-reduce per call, µs, each run |")
    print("|---|---|---|---|---|---|---|")
    for (cfg, pl, kind), v in sorted(rows.items()):
        tt = [x[0] for x in v]; tp = [x[1] for x in v]; ar = [x[2] for x in v if x[2] is not None]
        print(f"| {cfg} | {pl} | {kind or '—'} | {len(v)} | {statistics.median(tt):.2f} ({min(tt):.2f}-{max(tt):.2f}) | {statistics.median(tp):.3f} ({min(tp):.3f}-{max(tp):.3f}) | {' '.join(f'{a:.0f}' for a in ar) or '—'} |")
    print()
