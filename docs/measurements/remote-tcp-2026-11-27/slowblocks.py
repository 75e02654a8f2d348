# Where a run's slowest 1 % of steps and floor round trips fall, by block of
# 100 (PARTBENCH_BENCH_DUMP files), and the server's part of the slow steps.
# Usage: python3 slowblocks.py DIR TRANSPORT
import sys
import numpy as np
d, tr = sys.argv[1], sys.argv[2]
read = lambda n: np.array([float(x) for x in open(f'{d}/{tr}-{n}.txt') if x.strip()])
o, s, f = read('overhead'), read('server'), read('floor')
p50, p99 = np.percentile(o, 50), np.percentile(o, 99)
print('overhead p50/p90/p99', *(round(np.percentile(o, q), 1) for q in (50, 90, 99)), '| floor', *(round(np.percentile(f, q), 1) for q in (50, 90, 99)))
slow = o > p99
print('slowest 1 %: server part median', round(np.median(s[slow]), 1), 'µs, outside the server', round(np.median(o[slow] - s[slow]), 1), 'µs')
print('slowest 1 % of steps per block:', np.bincount((np.arange(len(o)) // 100)[slow], minlength=30).tolist())
fs = f > np.percentile(f, 99)
print('slowest 1 % of floor trips per block:', np.bincount((np.arange(len(f)) // 100)[fs], minlength=30).tolist())
print('over 2x p50: steps', round((o > 2 * p50).mean(), 3), 'floor', round((f > 2 * np.percentile(f, 50)).mean(), 3))
