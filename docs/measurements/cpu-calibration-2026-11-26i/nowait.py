import tomllib, sys, glob, os
W = sys.argv[1]
for f in sorted(glob.glob(f'{W}/after-*.toml')):
    d = tomllib.load(open(f, 'rb'))
    ents = [e for e in d.get('op_time', []) if e['kind'] in ('core_wait', 'recv_wait')]
    drop = [e for e in ents if e['time_max_s'] <= 1e-9]
    print(os.path.basename(f), 'entries without any wait (dropped by 1c717da):',
          ', '.join(f"{e['kind']} ranks {e['ranks']} after {e['size']/1e3:.1f} µs" for e in drop) or 'none')
    for e in sorted(ents, key=lambda e: (e['kind'], e['ranks'], e['size'])):
        print(f"  {e['kind']} ranks {e['ranks']} burst {e['size']/1e3:.1f} µs: median {e['time_s']*1e6:.3g} µs, max {e['time_max_s']*1e6:.3g} µs")
