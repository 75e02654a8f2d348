#!/usr/bin/env python3
"""A pricing change's effect apart from the calibration's: every profile of a run.sh pass
(before-N.toml and after-N.toml) priced by both binaries (`model --dry-run`), for the six
configs, against the median p50 over the pass's six runs of each config (both variants' runs:
the same executor). Each cell: the TTFT and TPOT error of the median over the three profiles'
models. Run it where no measurement runs (it starts 72 models), or at idle priority.
Usage: crossprice.py BIN_BEFORE BIN_AFTER WORKDIR..."""
import json, subprocess, statistics, glob, sys, os
BB,BA=sys.argv[1],sys.argv[2]
CF={'single-tiny':'test/single-tiny','tp2-tiny':'tp2-tiny.toml','pp2-tiny':'pp2-tiny.toml','tp2pp2-tiny':'test/tp2pp2-tiny','tp2-dp2-tiny':'test/tp2-dp2-tiny','layerwise16-tiny':'test/layerwise16-tiny'}
def find(o,k):
  if isinstance(o,dict):
    for a,v in o.items():
      if a==k: yield v
      yield from find(v,k)
  elif isinstance(o,list):
    for x in o: yield from find(x,k)
def est(b,cfg,p,W):
  out=subprocess.run([b,'model','--dry-run','--config',cfg,'--calibration',p,'--format','json'],capture_output=True,text=True,cwd=W).stdout
  d=json.loads(out)
  return next(find(d,'ttft_s')), next(find(d,'tpot_s'))
for W in sys.argv[3:]:
  print('##',W)
  print('| config | runs TTFT / TPOT (ms) | profiles | before binary: TTFT, TPOT err (median of 3) | after binary |')
  print('|---|---|---|---|---|')
  for name,cfg in CF.items():
    mt,mp=[],[]
    for f in glob.glob(W+'/out/*/%s-*/results.json'%name):
      d=json.load(open(f))
      for c in d['comparison']:
        if c['metric']=='ttft': mt.append(c['measured']['p50'])
        if c['metric']=='tpot': mp.append(c['measured']['p50'])
    if not mt: continue
    t0,p0=statistics.median(mt),statistics.median(mp)
    for prof in ('before','after'):
      cells=[]
      for b in (BB,BA):
        e=[est(b,cfg,os.path.join(W,'%s-%d.toml'%(prof,r)),W) for r in (1,2,3) if os.path.exists(os.path.join(W,'%s-%d.toml'%(prof,r)))]
        et=statistics.median(x[0] for x in e); ep=statistics.median(x[1] for x in e)
        cells.append('%+.1f / %+.1f %%'%((et-t0)/t0*100,(ep-p0)/p0*100))
      print('| %s | %.3f / %.3f | %s-N | %s |'%(name,t0*1e3,p0*1e3,prof,' | '.join(cells)))
