import json,sys
d=json.load(open(sys.argv[1]))
ev=[e for e in d['traceEvents'] if e['ph']=='X' and e['args'].get('phase')=='prefill']
by={}
for e in ev: by[(e['pid'],e['tid'],e['name'],e['args'].get('microbatch'))]=e
for rank in (0,1,2,3):
  rows=[(k,e) for k,e in by.items() if k[0]==1 and k[1]==rank]
  rows.sort(key=lambda x:x[1]['ts'])
  print('rank',rank)
  sm=sM=0
  for k,e in rows:
    m=by.get((2,)+k[1:])
    if e['cat'] in ('all_reduce','send','recv','all_gather'):
      print('  %-22s mb%s meas ts %7.1f dur %6.1f | model ts %7.1f dur %6.1f  %s'%(k[2],k[3],e['ts'],e['dur'],m['ts'] if m else -1,m['dur'] if m else -1, {a:b for a,b in (m or {}).get('args',{}).items() if a not in('phase','microbatch','bytes')}))
