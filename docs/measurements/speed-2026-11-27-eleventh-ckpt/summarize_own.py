# Summarizes the own-file diagnostic of BenchmarkRankLoadShardedCold -test.v outputs (7292f43 on):
# per TP degree the sharded load over the fastest checkpoint-file read and over a cold direct read
# of the rank's own file right after the loads (first, warm-up pair left out).
# Usage: python3 summarize_own.py own-*.txt
import re, sys, statistics as st
pat = re.compile(r'sharded (\d+) MB/s \(([\d.]+)\), own-direct (\d+) MB/s \(([\d.]+)\)')
for f in sys.argv[1:]:
    txt = open(f).read()
    la = re.findall(r'load ([\d.]+)', txt)
    print(f"== {f.split('/')[-1]}  1-min load {la[0]} -> {la[-1]}")
    for tp in (1, 2, 8):
        P = [[float(x) for x in pat.search(l).groups()] for l in txt.splitlines() if l.startswith(f'pair tp={tp} ')][1:]
        vs, own, ownr = [p[1] for p in P], [p[3] for p in P], [p[2] for p in P]
        print(f"TP{tp}: vs checkpoint file {st.median(vs):.2f} ({min(vs):.2f}-{max(vs):.2f}) >=0.8 {sum(x >= 0.8 for x in vs)}/{len(vs)}; "
              f"vs own file {st.median(own):.2f} ({min(own):.2f}-{max(own):.2f}) >=0.8 {sum(x >= 0.8 for x in own)}/{len(own)}; "
              f"own-file read {min(ownr):.0f}-{max(ownr):.0f} MB/s")
