#!/usr/bin/env python3
"""Write beside each calibration CAL a copy CAL.aug.toml that holds a core_wait entry of 1 ns
(samples as its others) for every burst calibrate measured but dropped (no repeat waited): the
bursts are the core_stretch entries' wall times (time_s, the same bursts' median wall time
between all_reduces), each kept core_wait entry takes the burst nearest its size, a burst left over is a dropped one.
Likewise a recv_wait entry of 1 ns for a ring burst (the first three bursts) without one.
This is what calib/corewait.go at 0924748 keeps (core_wait); with --recv likewise recv_wait (tried, not kept). Usage: augment.py [--recv] OUTDIR CAL..."""
import sys, tomllib, os, collections
args = sys.argv[1:]
recv = args[0] == '--recv'  # also the recv_wait entries (tried, not kept)
if recv: args = args[1:]
out = args[0]
for f in args[1:]:
    d = tomllib.load(open(f, 'rb'))
    cw, st = collections.defaultdict(list), collections.defaultdict(list)
    for e in d.get('op_time', []):
        if e['kind'] == 'core_wait': cw[(e['shape'], e['ranks'])].append(e)
        if e['kind'] == 'core_stretch': st[(e['shape'], e['ranks'])].append(e)
    rw = collections.defaultdict(list)
    for e in d.get('op_time', []):
        if e['kind'] == 'recv_wait': rw[(e['shape'], e['ranks'])].append(e)
    add, rep = [], []
    import math
    # recv_wait: the ring's bursts are the first three of the core wait's (RingBursts),
    # their wall times taken from the core_stretch entries as above.
    for k, ss in st.items():
        if not recv or not rw[k]: continue  # no receive wait measured at that count (none kept before either)
        ss3 = ss[:3]
        free = list(range(len(ss3)))
        for e in rw[k]:
            j = min(free, key=lambda j: abs(math.log(ss3[j]['time_s'] * 1e9 / e['size'])))
            free.remove(j)
        for j in free:
            w = ss3[j]['time_s'] * 1e9
            size = int(round(w))
            while any(e['size'] == size for e in rw[k]): size += 1
            add.append(f'[[op_time]]\nkind = "recv_wait"\nshape = "{k[0]}"\nsize = {size}\ncontext = 0\ntime_s = 1e-09\ntime_min_s = 1e-09\ntime_max_s = 1e-09\nsamples = {ss3[j]["samples"]}\nranks = {k[1]}\n')
            rep.append(f"recv_wait {k[1]} ranks {w/1e3:.3g} µs")
    for k, ss in st.items():
        free = list(range(len(ss)))
        for e in cw[k]:  # each kept entry takes its nearest burst
            j = min(free, key=lambda j: abs(math.log(ss[j]['time_s'] * 1e9 / e['size'])))
            free.remove(j)
        for j in free:
            s = ss[j]
            w = s['time_s'] * 1e9
            if True:
                size = int(round(w))
                while any(e['size'] == size for e in cw[k]): size += 1
                add.append(f'[[op_time]]\nkind = "core_wait"\nshape = "{k[0]}"\nsize = {size}\ncontext = 0\ntime_s = 1e-09\ntime_min_s = 1e-09\ntime_max_s = 1e-09\nsamples = {s["samples"]}\nranks = {k[1]}\n')
                rep.append(f"core_wait {k[1]} ranks {w/1e3:.3g} µs")
    txt = open(f).read()
    i = txt.index('[[op_time]]')
    name = f.replace('/tmp/skew7/', '').replace('/', '-').replace('.toml', '')
    open(os.path.join(out, name + '.aug.toml'), 'w').write(txt[:i] + ''.join(add) + txt[i:])
    print(name, "added:", ", ".join(rep) or "none")
