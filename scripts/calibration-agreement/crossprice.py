#!/usr/bin/env python3
"""A pricing change's effect apart from the calibration's: every profile of a run.sh pass
(before-N.toml and after-N.toml) priced by both binaries (`model --dry-run`), for the six
configs, against the median p50 over the pass's six runs of each config (both variants' runs:
the same executor). Each cell: the TTFT and TPOT error of the median over the three profiles'
models. Run it where no measurement runs (it starts 72 models), or at idle priority.
Usage: crossprice.py BIN_BEFORE BIN_AFTER WORKDIR..."""
import glob, os, statistics, sys
from pricing import CONFIGS as CF, model, pass_runs
BB,BA=sys.argv[1],sys.argv[2]
def est(b,cfg,p,W):
  return model(b,cfg,p,cwd=W)
for W in sys.argv[3:]:
  print('##',W)
  print('| config | runs TTFT / TPOT (ms) | profiles | before binary: TTFT, TPOT err (median of 3) | after binary |')
  print('|---|---|---|---|---|')
  for name,cfg in CF.items():
    runs=pass_runs(W,name)
    if not runs: continue
    t0,p0,_=runs
    for prof in ('before','after'):
      cells=[]
      for b in (BB,BA):
        e=[est(b,cfg,os.path.join(W,'%s-%d.toml'%(prof,r)),W) for r in (1,2,3) if os.path.exists(os.path.join(W,'%s-%d.toml'%(prof,r)))]
        et=statistics.median(x[0] for x in e); ep=statistics.median(x[1] for x in e)
        cells.append('%+.1f / %+.1f %%'%((et-t0)/t0*100,(ep-p0)/p0*100))
      print('| %s | %.3f / %.3f | %s-N | %s |'%(name,t0*1e3,p0*1e3,prof,' | '.join(cells)))
