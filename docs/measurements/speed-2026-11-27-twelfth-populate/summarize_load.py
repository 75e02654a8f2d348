# Summarizes load-rounds.sh outputs (BenchmarkShardedLoadCold, one load per
# process): per TP degree, each round's wall s / system CPU s / user CPU s /
# minor faults for each binary, and the medians over the rounds.
# Usage: python3 summarize_load.py load-rounds*.txt
import re, sys, statistics as st
rows = {}  # (bin, tp) -> list of (round label, wall, sys, user, flt)
for f in sys.argv[1:]:
    label = None
    for l in open(f):
        m = re.match(r'=== round (\d+) (\w+) (\S+) loadavg (\S+)', l)
        if m:
            label, b = f"{f.split('/')[-1]}:{m.group(1)} ({m.group(3)}, load {m.group(4)})", m.group(2)
            continue
        m = re.match(r'BenchmarkShardedLoadCold/tp=(\d+)-\d+\s+1\s+(\d+) ns/op.*?(\d+) minflt/op\s+([\d.]+) sys-s/op\s+([\d.]+) user-s/op', l)
        if m:
            tp = int(m.group(1))
            rows.setdefault((b, tp), []).append((label, int(m.group(2)) / 1e9, float(m.group(4)), float(m.group(5)), int(m.group(3))))
for tp in (1, 2, 8):
    print(f"TP {tp}")
    for b in sorted({k[0] for k in rows}, key=lambda x: (x != "before", x)):
        rs = rows.get((b, tp), [])
        for r in rs:
            print(f"  {b:6} {r[0]:40} wall {r[1]:.3f}  sys {r[2]:.3f}  user {r[3]:.3f}  faults {r[4]}")
        if rs:
            print(f"  {b:6} median of {len(rs)}: wall {st.median(r[1] for r in rs):.3f}  sys {st.median(r[2] for r in rs):.3f}  "
                  f"user {st.median(r[3] for r in rs):.3f}  sys+user {st.median(r[2]+r[3] for r in rs):.3f}  faults {st.median(r[4] for r in rs):.0f}")
