"""Where a dumped run's raw-TCP steps fall (PARTBENCH_BENCH_DUMP files):
the share of steps under 16 µs of overhead (both ends running on their own
vCPU and polling: 10-16 µs), 16-35 µs (one sleeps and is woken on the same
vCPU: the unpolled p50 of 20-25), and over 35 µs (a wake-up across vCPUs,
or a spin that held the vCPU its peer needed); p50, p99, and the slow
steps (over 3 p50) per block of 100.  Usage: python3 regimes.py DIR..."""
import sys
import numpy as np
for d in sys.argv[1:]:
    x = np.array([float(l) for l in open(f"{d}/tcp-overhead.txt") if l.strip()])
    f = np.array([float(l) for l in open(f"{d}/tcp-floor.txt") if l.strip()])
    p50, p99 = np.percentile(x, [50, 99])
    a, b, c = (x < 16).mean(), ((x >= 16) & (x < 35)).mean(), (x >= 35).mean()
    slow = np.where(x > 3 * p50)[0]
    print(f"{d}: {len(x)} steps, p50 {p50:.1f} p99 {p99:.1f} (x{p99/p50:.2f}); floor p50 {np.median(f):.1f} p99 {np.percentile(f,99):.1f}; "
          f"<16 µs {a:.0%}, 16-35 {b:.0%}, >=35 {c:.0%}; slow steps per block: {' '.join(map(str, np.bincount(slow // 100, minlength=30)))}")
