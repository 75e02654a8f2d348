import json, subprocess, statistics, glob, sys, os
B=sys.argv[1]; W=sys.argv[2]; PD=sys.argv[3:]
CF={'single-tiny':'test/single-tiny','tp2-tiny':'tp2-tiny.toml','pp2-tiny':'pp2-tiny.toml','tp2pp2-tiny':'test/tp2pp2-tiny','tp2-dp2-tiny':'test/tp2-dp2-tiny','layerwise16-tiny':'test/layerwise16-tiny'}
def find(o,k):
  if isinstance(o,dict):
    for a,v in o.items():
      if a==k: yield v
      yield from find(v,k)
  elif isinstance(o,list):
    for x in o: yield from find(x,k)
def est(cfg,p):
  out=subprocess.run([B,'model','--dry-run','--config',cfg,'--calibration',p,'--format','json'],capture_output=True,text=True,cwd=W).stdout
  d=json.loads(out); return next(find(d,'ttft_s')), next(find(d,'tpot_s'))
for name,cfg in CF.items():
  mt,mp=[],[]
  for f in glob.glob(W+'/out/*/%s-*/results.json'%name):
    d=json.load(open(f))
    for c in d['comparison']:
      if c['metric']=='ttft': mt.append(c['measured']['p50'])
      if c['metric']=='tpot': mp.append(c['measured']['p50'])
  t0,p0=statistics.median(mt),statistics.median(mp)
  for pd in PD:
    e=[est(cfg,p) for p in sorted(glob.glob(pd+'/*-[123].toml'))]
    ts=' '.join('%+.0f'%((x[0]-t0)/t0*100) for x in e); ps=' '.join('%+.0f'%((x[1]-p0)/p0*100) for x in e)
    print(f'{name:17s} {os.path.basename(pd):8s} TTFT {ts:30s} | TPOT {ps}')
