#!/usr/bin/env python3
"""The 2-rank recv_wait entries of passes 1-4's 24 calibrations (docs/measurements/
cpu-calibration-2026-11-26k; the profiles in /tmp/skew7/pN, not in the tree): per burst, the
median over the 5 repeats and its extremes (time_s (time_min_s–time_max_s), µs)."""
import glob, tomllib
for f in sorted(glob.glob('/tmp/skew7/p[1-4]/*-[123].toml')):
    d = tomllib.load(open(f, 'rb'))
    es = [e for e in d['op_time'] if e['kind'] == 'recv_wait' and e['ranks'] == 2]
    print(f[11:], "  ".join(f"{e['size']/1e3:.3g} µs: {e['time_s']*1e6:.3g} ({e['time_min_s']*1e6:.3g}–{e['time_max_s']*1e6:.3g})" for e in es))
