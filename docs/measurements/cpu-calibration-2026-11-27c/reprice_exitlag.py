#!/usr/bin/env python3
"""Each pass's three calibrations priced by three partbench binaries against the pass's runs:
main (baca2fb), active (9ceea3c: the core wait's share from the active ranks) and exitlag (9ceea3c
with 8fb67e9's exit-lag pricing of a 2-rank all_reduce put back, built for this only): error of
the median over the calibrations against the median of the six runs' p50, tp2pp2-tiny and
tp2-dp2-tiny. Usage: reprice_exitlag.py WORKDIR..."""
import subprocess,json,statistics as st,sys,glob
bins={'main':'/tmp/cal9b-bin/partbench','active':'/tmp/cal9b-new/partbench','exitlag':'/tmp/cal9b-exitlag/partbench'}
def price(b,cfg,toml):
    out=subprocess.run([b,'model','--dry-run','--config',cfg,'--calibration',toml,'--format','csv'],capture_output=True,text=True).stdout
    t=p=None
    for l in out.splitlines():
        f=l.split(',')
        if len(f)>8 and f[2]=='' and f[1]=='prefill': t=float(f[7])
        if len(f)>8 and f[2]=='' and f[1]=='decode': p=float(f[8])
    return t,p
for w in sys.argv[1:]:
    for cfg in ('tp2pp2-tiny','tp2-dp2-tiny'):
        meas={'TTFT':[],'TPOT':[]}
        for fn in glob.glob(f'{w}/out/*/{cfg}-*/results.json'):
            m=json.load(open(fn))['measurement']
            meas['TTFT'].append(m['ttft_s']['p50']); meas['TPOT'].append(m['tpot_s']['p50'])
        mt,mp=st.median(meas['TTFT']),st.median(meas['TPOT'])
        row=[]
        for name,b in bins.items():
            ps=[price(b,'test/'+cfg,t) for t in sorted(glob.glob(f'{w}/after-*.toml'))]
            t=st.median(x[0] for x in ps); p=st.median(x[1] for x in ps)
            row.append(f"{name} TTFT {100*(t/mt-1):+.1f}% TPOT {100*(p/mp-1):+.1f}%")
        print(w.split('/')[-1], cfg, ' | '.join(row))
