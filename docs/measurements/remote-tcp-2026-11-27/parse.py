import sys, re, statistics as st
rows=[]
for fn in sys.argv[1:]:
    for l in open(fn):
        f=l.split()
        r,b,load,t=f[0],f[1],f[2][5:],f[3]; f=[x for x in f if not x.startswith("cpu") or "-" in x]; name=f[4]
        m={}
        for i in range(6,len(f)-1):
            try: v=float(f[i])
            except: continue
            m[f[i+1]]=v
        tr='grpc' if '/grpc' in name else 'tcp'
        rows.append((fn,r,b,float(load),t,tr,m))
for tr in ['grpc','tcp']:
    for b in ["before","after"]:
        if not [x for x in rows if x[5]==tr and x[2]==b]: continue
        xs=[x for x in rows if x[5]==tr and x[2]==b]
        pf=[x[6]['p50/floor'] for x in xs]; pp=[x[6]['p99/p50'] for x in xs]; fp=[x[6]['floor-p99/p50'] for x in xs]
        o50=[x[6]['overhead-p50-µs'] for x in xs]; f50=[x[6]['floor-p50-µs'] for x in xs]
        goal50 = 1.5
        print(f"{tr:4} {b:6} n={len(xs)} p50/floor med {st.median(pf):.2f} [{min(pf):.2f}-{max(pf):.2f}] <=1.5: {sum(v<=goal50 for v in pf)}/{len(pf)} | p99/p50 med {st.median(pp):.2f} <=3: {sum(v<=3 for v in pp)}/{len(pp)} | floor p99/p50 <=3: {sum(v<=3 for v in fp)} | over-p50 med {st.median(o50):.1f} floor-p50 med {st.median(f50):.1f}")
        print("   p50/floor:", ' '.join(f"{v:.2f}" for v in pf))
        print("   p99/p50:  ", ' '.join(f"{v:.2f}" for v in pp))
        print("   floor p99/p50:", ' '.join(f"{v:.2f}" for v in fp))
        if b=='after' and 'server-cpu-µs/step' in xs[0][6] or (tr=='grpc' and b=='after' and 'client-cpu-µs/step' in xs[0][6]):
            for k in ['client-cpu-µs/step','client-cpu-µs/floor','server-cpu-µs/step','echo-cpu-µs/floor']:
                if k in xs[0][6]: print(f"   {k} med {st.median([x[6][k] for x in xs]):.2f}")
loads=[x[3] for x in rows]; print("load", min(loads), max(loads))
print("absolute medians (µs): transport build over-p50 over-p99 floor-p50 floor-p99")
for tr in ['grpc','tcp']:
    for b in ['before','after']:
        xs=[x for x in rows if x[5]==tr and x[2]==b]
        if not xs: continue
        print(" ", tr, b, *[f"{st.median([x[6][k] for x in xs]):.1f}" for k in ['overhead-p50-µs','overhead-p99-µs','floor-p50-µs','floor-p99-µs']])
