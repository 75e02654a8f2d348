#!/usr/bin/env python3
"""tp2-tiny's TTFT and TPOT per calibration of run.sh passes: each round's modeled figure by before and
after (their results.json) against the pass's measured figure (the median of its six runs' p50, as
summarize.py), the error per calibration, and how many of a pass's calibrations are within 10 %.

Usage: percal.py WORKDIR..."""
import json, statistics as st, sys
print("| pass | metric | measured (ms) | before: modeled per round (ms), error | after: modeled per round (ms), error | within 10 %: before / after |")
print("|---|---|---|---|---|---|")
for w in sys.argv[1:]:
    d = {(v, r): {c["metric"]: c for c in json.load(open(f"{w}/out/{v}/tp2-tiny-{r}/results.json"))["comparison"]}
         for v in ("after", "before") for r in (1, 2, 3)}
    for m in ("ttft", "tpot"):
        y = st.median(d[k][m]["measured"]["p50"] for k in d)
        cells, n = [], []
        for v in ("before", "after"):
            xs = [d[(v, r)][m]["modeled"] for r in (1, 2, 3)]
            es = [(x - y) / y * 100 for x in xs]
            cells.append(", ".join(f"{x*1e3:.3f} ({e:+.1f} %)" for x, e in zip(xs, es)))
            n.append(sum(abs(e) <= 10 for e in es))
        print(f"| {w.rstrip('/').split('/')[-1]} | {m.upper()} | {y*1e3:.3f} | {cells[0]} | {cells[1]} | {n[0]} / {n[1]} |")
