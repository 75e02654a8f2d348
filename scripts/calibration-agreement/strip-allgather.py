#!/usr/bin/env python3
"""Reads a calibration profile on stdin and writes it without its all_gather: the op_time entries of
kind all_gather and the comm samples of op all_gather or all_gather_pairs — the profile calibrate wrote
before it timed the all_gather, from the same measurements (the link fit never read the all_gather's
samples). run.sh's BEFORE_FILTER."""
import re, sys

text = sys.stdin.read()
parts = re.split(r'(?m)^(?=\[)', text)
out = []
for p in parts:
    if p.startswith('[[op_time]]') and re.search(r'(?m)^kind = "all_gather"$', p):
        continue
    if p.startswith('[[comm]]') and re.search(r'(?m)^op = "all_gather(_pairs)?"$', p):
        continue
    out.append(p)
sys.stdout.write(''.join(out))
