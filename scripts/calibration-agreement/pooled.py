#!/usr/bin/env python3
"""Writes each profile given into OUTDIR with its core_wait entries at rank counts above the
host's cores replaced by the median of every repeat all the profiles list for the same burst (the
"core wait repeats" notes, matched by the burst's index, the profiles' burst wall times differing
a little), extremes the pooled least and greatest: what one calibration of all of those repeats
would have priced (docs/measurements/cpu-calibration.md, (twenty-eighth)). Prints the pooled
median per (ranks, cores, burst index). Usage: pooled.py OUTDIR PROFILE..."""
import re, statistics, sys, tomllib, os
out_dir=sys.argv[1]; profs=sys.argv[2:]
pool={}  # (ranks, cores, idx) -> values
per={}
for p in profs:
    notes=tomllib.loads(open(p).read()).get("calibration",{}).get("notes",[])
    for n in notes:
        m=re.match(r"core wait repeats at (\d+) ranks on (\d+) cores, .*? in ns\): (.*)$", n)
        if not m: continue
        for i,part in enumerate(m.group(3).split("; ")):
            size,vals=part.split(": ")
            pool.setdefault((int(m.group(1)),int(m.group(2)),i),[]).extend(float(v)*1e-6 for v in vals.split())
            per[(p,int(m.group(1)),int(m.group(2)),int(size.removeprefix("size ")))]=i
def field(b,name):
    m=re.search(rf'(?m)^{name} = "?([^"\n]*)"?$', b); return m.group(1) if m else None
for p in profs:
    text=open(p).read()
    parts=re.split(r"(?m)^(?=\[)", text); out=[]
    for q in parts:
        if q.startswith("[[op_time]]") and field(q,"kind")=="core_wait":
            key=(p,int(field(q,"ranks")),int(field(q,"shape").removeprefix("cores=")),int(field(q,"size")))
            if key in per and key[1] > key[2]:
                v=pool[(key[1],key[2],per[key])]
                med=max(statistics.median(v),1e-9)
                q=re.sub(r'(?m)^time_s = .*$', f'time_s = {med!r}', q)
                q=re.sub(r'(?m)^time_min_s = .*$', f'time_min_s = {min(max(min(v),1e-9),med)!r}', q)
                q=re.sub(r'(?m)^time_max_s = .*$', f'time_max_s = {max(max(v),med)!r}', q)
        out.append(q)
    open(os.path.join(out_dir,os.path.basename(p)),'w').write(''.join(out))
for k,v in sorted(pool.items()): print(k, len(v), round(statistics.median(v)*1e6,2))
