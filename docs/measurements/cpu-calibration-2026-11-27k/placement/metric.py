import json,sys,statistics
d=json.load(open(sys.argv[1]+'/results.json'));m=d['measurement']
per=[]
for rk in m['ranks']:
    n=rk['prefill_counts']['calls'].get('all_reduce',0)/m['iterations']
    if n: per+=[x/n*1e6 for x in rk['phase_busy_s']['prefill']['all_reduce']]
print("%.3f %.3f %s"%(m['ttft_s']['p50']*1e3,m['tpot_s']['p50']*1e3,("%.1f"%statistics.median(per)) if per else "-"))
