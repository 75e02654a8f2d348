#!/usr/bin/env python3
"""tp2pp2-tiny per profile: the 4-rank core wait W at a 30 µs burst (the prefill's between its
all-reduces; a power law between the measured bursts, as sim looks it up), the first two
4-rank burst stretch entries (alone → wall, µs), and TTFT / TPOT priced by both binaries
against the pass's runs (the median p50 of its tp2pp2-tiny runs: run.sh's out/*/tp2pp2-tiny-*,
or out-*/ of a folder of single runs). A profile is every *.toml in WORKDIR but the configs.
Usage: perprofile.py BIN_BEFORE BIN_AFTER WORKDIR..."""
import glob,math,os,sys,tomllib
from pricing import model, run_medians
BB,BA=sys.argv[1],sys.argv[2]
def est(b,p):
  return model(b,'test/tp2pp2-tiny',p)
def at(ops,kind,x):
  pts=sorted((o['size'],o['time_s']) for o in ops if o['kind']==kind and o.get('ranks')==4)
  for (a,ta),(b,tb) in zip(pts,pts[1:]):
    if a<=x<=b:
      u=math.log(x/a)/math.log(b/a); return ta**(1-u)*tb**u
  return float('nan')
print('| pass | profile | W at 30 µs (µs/step) | burst wall at 30 µs alone (×) | TTFT main / fix (err) | TPOT main / fix (err) |')
print('|---|---|---|---|---|---|')
for W in sys.argv[3:]:
  t0,p0,nruns=run_medians(glob.glob(W+'/out/*/tp2pp2-tiny-*/results.json')+glob.glob(W+'/out-*/results.json'))
  for p in sorted(glob.glob(W+'/*.toml')):
    if 'tiny' in p: continue
    ops=tomllib.load(open(p,'rb'))['op_time']
    w=at(ops,'core_wait',30000)*1e6
    st=[ (o['size'],o['time_s']) for o in ops if o['kind']=='core_stretch' and o.get('ranks')==4]
    a=[est(b,p) for b in (BB,BA)]
    print('| %s | %s | %.1f | %s | %.2f / %.2f ms (%+.1f / %+.1f %%) | %.3f / %.3f ms (%+.1f / %+.1f %%) |'%(os.path.basename(W),os.path.basename(p),w,
      ', '.join('%.0f→%.0f'%(s/1e3,t*1e6) for s,t in sorted(st)[:2]),
      a[0][0]*1e3,a[1][0]*1e3,(a[0][0]-t0)/t0*100,(a[1][0]-t0)/t0*100,a[0][1]*1e3,a[1][1]*1e3,(a[0][1]-p0)/p0*100,(a[1][1]-p0)/p0*100))
  print('| %s | runs (median p50 of %d) | | | %.2f ms | %.3f ms |'%(os.path.basename(W),nruns,t0*1e3,p0*1e3))
