#!/usr/bin/env python3
"""Reads a calibration profile on stdin and writes it without the core_wait and recv_wait entries
that measured no wait in any repeat (time_max_s = 1 ns): the profile calibrate wrote before it kept
them, from the same measurements. run.sh's BEFORE_FILTER."""
import re, sys

text = sys.stdin.read()
parts = re.split(r'(?m)^(?=\[)', text)
out = []
for p in parts:
    if p.startswith('[[op_time]]') and re.search(r'(?m)^kind = "(core_wait|recv_wait)"$', p):
        m = re.search(r'(?m)^time_max_s = (\S+)$', p)
        if m and float(m.group(1)) <= 1e-9:
            continue
    out.append(p)
sys.stdout.write(''.join(out))
