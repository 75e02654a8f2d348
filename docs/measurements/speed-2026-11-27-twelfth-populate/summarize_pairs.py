# Section 36's summarize.py (speed-2026-11-27-eleventh-ckpt/), unchanged, run on this section's pairs-*.txt.
# Summarizes BenchmarkRankLoadShardedCold -test.v outputs (three baselines a pair: seq-cache,
# seq-direct one stream, seq-directqN at the loader's depth): per TP degree the medians and ranges
# of each pair's rates and ratios (the first, warm-up pair of each size left out), which read was
# each pair's baseline, how many pairs of the sharded load read at >= 0.8 of it, and how many would
# against the direct reads alone. Usage: python3 summarize.py pairs-*.txt
import re, sys, statistics as st
pat = re.compile(r'seq-cache (\d+) MB/s, seq-direct (\d+) MB/s, seq-directq\d+ (\d+) MB/s, '
                 r'checkpoint (\d+) MB/s \(([\d.]+)\), sharded (\d+) MB/s \(([\d.]+)\)')
for f in sys.argv[1:]:
    txt = open(f).read()
    la = re.findall(r'load ([\d.]+)', txt)
    print(f"== {f.split('/')[-1]}  1-min load {la[0]} -> {la[-1]}")
    for tp in (1, 2, 8):
        rows = [l for l in txt.splitlines() if l.startswith(f'pair tp={tp} ')][1:]  # first: warm-up
        P = [[float(x) for x in pat.search(l).groups()] for l in rows]
        col = lambda i: [p[i] for p in P]
        rng = lambda xs, fmt: f"{fmt.format(st.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"
        m = re.search(rf'tp={tp}-2 .*', txt).group(0)
        cpu = re.search(r'([\d.]+) sharded-cpu-s', m).group(1)
        ccpu = re.search(r'([\d.]+) checkpoint-cpu-s', m).group(1)
        sh = col(6)
        best = ['cache' if p[0] >= max(p[1], p[2]) else ('direct' if p[1] >= p[2] else 'directq') for p in P]
        # the sharded load's ratio against the faster direct read alone
        vs_direct = [p[6] * max(p[0], p[1], p[2]) / max(p[1], p[2]) for p in P]
        fails = [(b, int(max(p[0], p[1], p[2])), round(s, 2)) for b, p, s in zip(best, P, sh) if s < 0.8]
        print(f"TP{tp}: seq-cache {rng(col(0), '{:.0f}')} seq-direct {rng(col(1), '{:.0f}')} "
              f"seq-directq {rng(col(2), '{:.0f}')} | ckpt {rng(col(4), '{:.2f}')} cpu {ccpu} | "
              f"sharded {rng(sh, '{:.2f}')} {st.median(col(5)):.0f} MB/s cpu {cpu} >=0.8 in "
              f"{sum(x >= 0.8 for x in sh)}/{len(sh)}; baseline " +
              ",".join(best) + f"; below 0.8 (baseline, its MB/s, ratio) {fails}; vs direct reads alone >=0.8 in "
              f"{sum(x >= 0.8 for x in vs_direct)}/{len(sh)}")
