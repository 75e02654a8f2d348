import json,sys,collections
for f in sys.argv[1:]:
  d=json.load(open(f))
  ev=[e for e in d['traceEvents'] if e['ph']=='X' and e['args'].get('phase')=='prefill']
  s=collections.defaultdict(float)
  for e in ev:
    c=e['cat']; g='comp' if c not in('all_reduce','all_gather','send','recv') else c
    s[(e['pid'],e['tid'],e['args'].get('microbatch'),g)]+=e['dur']
  print(f)
  for r in range(4):
    for mb in (0,1):
      print(' r%d mb%d'%(r,mb), '  '.join('%s %6.1f/%6.1f'%(g,s[(1,r,mb,g)],s[(2,r,mb,g)]) for g in ('comp','all_reduce','all_gather','send','recv')))
