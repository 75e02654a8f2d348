# (Copied from speed-2026-11-27-tenth-ckpt, the load read from the "== ... load" lines.) Summarizes BenchmarkRankLoadShardedCold -test.v outputs: per TP degree the medians and ranges of each
# pair (the first, warm-up pair of each size left out), and how many pairs of the sharded load read at
# >= 0.8 of the faster sequential read. Usage: python3 summarize.py run.txt ...
import re,sys,statistics as st
for f in sys.argv[1:]:
    txt=open(f).read()
    la=re.findall(r'load ([\d.]+) ',txt)
    print(f"== {f.split('/')[-1]}  load {la[0]} -> {la[-1]}")
    for tp in (1,2,8):
        rows=[l for l in txt.splitlines() if l.startswith(f'pair tp={tp} ')]
        rows=rows[1:]  # first is the warm-up (b.N=1) pair
        P=[re.search(r'seq-cache (\d+) MB/s, seq-direct (\d+) MB/s, checkpoint (\d+) MB/s \(([\d.]+)\), sharded (\d+) MB/s \(([\d.]+)\)',l).groups() for l in rows]
        P=[[float(x) for x in p] for p in P]
        col=lambda i:[p[i] for p in P]
        m=re.search(rf'tp={tp}-2 .*',txt).group(0)
        cpu=re.search(r'([\d.]+) sharded-cpu-s',m).group(1); ccpu=re.search(r'([\d.]+) checkpoint-cpu-s',m).group(1)
        sh=col(5)
        print(f"TP{tp}: seq-cache {st.median(col(0)):.0f} ({min(col(0)):.0f}-{max(col(0)):.0f}) seq-direct {st.median(col(1)):.0f} ({min(col(1)):.0f}-{max(col(1)):.0f}) | ckpt {st.median(col(3)):.2f} ({min(col(3)):.2f}-{max(col(3)):.2f}) {st.median(col(2)):.0f}MB/s cpu {ccpu} | sharded {st.median(sh):.2f} ({min(sh):.2f}-{max(sh):.2f}) >=0.8 in {sum(x>=0.8 for x in sh)}/{len(sh)}  {st.median(col(4)):.0f}MB/s cpu {cpu}")
