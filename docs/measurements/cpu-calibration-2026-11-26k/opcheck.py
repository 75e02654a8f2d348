import json, glob, sys
W = sys.argv[1]
for name in sys.argv[2:]:
    for f in sorted(glob.glob(f"{W}/out/*/{name}-*/results.json")):
        d = json.load(open(f))
        rows = [r for r in d['op_check'] if r['kind'] in ('all_reduce', 'recv', 'all_gather')]
        print(f.split('/out/')[1].replace('/results.json', ''), ' | '.join(f"{r['phase']} {r['kind']}: {r['measured_s']*1e6:.0f}/{r['modeled_s']*1e6:.0f}" for r in rows))
