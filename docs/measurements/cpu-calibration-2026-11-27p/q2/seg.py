#!/usr/bin/env python3
"""TTFT's critical path in tp2pp2-tiny's prefill, measured (pid 1 of run --trace) and modeled
(pid 2, or a model --dry-run --trace file's only process): per segment, µs from the prefill's
first event: stage 0's micro-batch 0 (fill, to its x.send's end), stage 0's micro-batch 1
(to its x.send's end), the hop (to stage 1's x.recv of micro-batch 1 ending), stage 1's
micro-batch 1 (to its tokens.send's start); and the same for stage 1's micro-batch 0.
Usage: seg.py TRACE.json..."""
import json, sys
def segs(ev, pid):
    ev = [e for e in ev if e.get('ph') == 'X' and e.get('pid') == pid and e['args'].get('phase') == 'prefill']
    if not ev: return None
    t0 = min(e['ts'] for e in ev)
    def end(tid, name, mb): 
        e = [x for x in ev if x['tid'] == tid and x['name'] == name and x['args'].get('microbatch') == mb]
        return e[0]['ts'] + e[0]['dur'] - t0
    def start(tid, name, mb):
        e = [x for x in ev if x['tid'] == tid and x['name'] == name and x['args'].get('microbatch') == mb]
        return e[0]['ts'] - t0
    s0m0 = end(0, 'x.send', 0); s0m1 = end(0, 'x.send', 1)
    r0 = end(2, 'x.recv', 0); t0s = start(2, 'tokens.send', 0)
    r1 = end(2, 'x.recv', 1); t1 = start(2, 'tokens.send', 1)
    return s0m0, s0m1 - s0m0, r1 - s0m1, t1 - r1, t1, t0s - r0
for f in sys.argv[1:]:
    d = json.load(open(f)); ev = d['traceEvents']
    pids = sorted({e.get('pid') for e in ev if e.get('ph') == 'X'})
    for pid in pids:
        s = segs(ev, pid)
        if s: print('%-28s pid %d: fill %6.1f  s0mb1 %6.1f  hop %6.1f  s1mb1 %6.1f  = %7.1f   (s1mb0 %6.1f)' % ((f, pid) + s))
