import tomllib, sys
for p in sys.argv[1:]:
    d = tomllib.load(open(p, 'rb'))
    es = [e for e in d['op_time'] if e['kind'] == 'all_reduce' and e['ranks'] == 2 and e['shape'] == 'ranks=2']
    print(p, ' '.join(f"{e['size']}:{e['time_s']*1e6:.1f}[{e['time_min_s']*1e6:.1f}-{e['time_max_s']*1e6:.1f}]n{e['samples']}" for e in sorted(es, key=lambda e: e['size']) if e['size'] <= 65536))
