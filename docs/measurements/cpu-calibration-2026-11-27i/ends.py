#!/usr/bin/env python3
"""layerwise16-tiny's traced prefill stages (measured, pid 1) by how many other ranks' Send calls ended
inside the stage's span (Recv end to Send start): a sender preempted in its call by the receiver it
woke that got a core back during this stage's compute. Per group: the gaps outside the op timers, the
op timers less the model's (pid 2, the same rank), the span less the model's; µs.

Usage: ends.py WORKDIR   (run.sh's, TRACE=1)
"""
import glob
import json
import statistics as st
import sys

R=[]
for f in sorted(glob.glob(sys.argv[1]+'/out/*/layerwise16-tiny-*.trace.json')):
    t=json.load(open(f)); ev=t if isinstance(t,list) else t['traceEvents']
    by={};mod={}
    for e in ev:
        if e.get('ph')!='X' or e['args'].get('phase')!='prefill': continue
        (by if e['pid']==1 else mod).setdefault(e['tid'],[]).append(e)
    for r in range(1,16):
        es=sorted(by[r],key=lambda e:e['ts'])
        rv=[e for e in es if e['cat']=='recv'][0]; sd=[e for e in es if e['cat']=='send'][0]
        s0=rv['ts']+rv['dur']; s1=sd['ts']
        ops=sum(e['dur'] for e in es if e['cat'] not in ('recv','send') and s0-0.01<=e['ts']<s1)
        mops=sum(e['dur'] for e in mod[r] if e['cat'] not in ('recv','send'))
        ends=sum(1 for q,qs in by.items() if q!=r for e in qs if e['cat']=='send' and s0<e['ts']+e['dur']<s1)
        R.append((ends,s1-s0-ops,ops-mops,s1-s0-mops))
for k in sorted(set(x[0] for x in R)):
    S=[x for x in R if x[0]==k]
    print('senders ending in span: %d  n=%2d  gaps mean %.1f  op timers - model mean %.1f  span - model mean %.1f (p50 %.1f)'%(k,len(S),st.mean(x[1] for x in S),st.mean(x[2] for x in S),st.mean(x[3] for x in S),st.median(x[3] for x in S)))
