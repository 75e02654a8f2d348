#!/usr/bin/env python3
"""Price tp2-tiny with calibration A, with B, and with A whose entries of one
group (op_time kind at ranks R, or a non-op_time table) are B's: which group
moves the modeled TPOT."""
import re, subprocess, sys, os, tempfile, collections
B = os.environ.get('PB', '/tmp/skew7/main-bin/partbench')
CFG = sys.argv[1]

def chunks(path):
    out, cur = [], []
    for line in open(path):
        if line.startswith('[') and cur:
            out.append(cur); cur = []
        cur.append(line)
    out.append(cur)
    return out

def key(ch):
    h = ch[0].split('#')[0].strip()
    if h == '[[op_time]]':
        d = {}
        for l in ch[1:]:
            m = re.match(r'(\w+) = (.*)', l)
            if m: d[m.group(1)] = m.group(2).split('#')[0].strip().strip('"')
        return ('op_time', d['kind'], d.get('ranks', '?'))
    return (h,)

def price(path, cfg=None):
    r = subprocess.run([B, 'model', '--dry-run', '--config', cfg or CFG, '--calibration', path, '--format', 'csv'], capture_output=True, text=True)
    ttft = tpot = None
    for l in r.stdout.splitlines():
        f = l.split(',')
        if len(f) > 8 and f[1] == 'prefill' and f[2] == '': ttft = float(f[7])
        if len(f) > 8 and f[1] == 'decode' and f[2] == '': tpot = float(f[8])
    if tpot is None: print(r.stderr[:2000]); sys.exit(1)
    return ttft, tpot

def mixed(a, b, g):
    ca, cb = chunks(a), chunks(b)
    out, placed = [], False
    for ch in ca:
        if key(ch) == g or (len(g) == 1 and key(ch)[0] == g[0]):
            if not placed:
                out += [c for c in cb if key(c) == g or (len(g) == 1 and key(c)[0] == g[0])]
                placed = True
            continue
        out.append(ch)
    if not placed:
        out += [c for c in cb if key(c) == g]
    f = tempfile.NamedTemporaryFile('w', suffix='.toml', delete=False)
    for ch in out: f.writelines(ch)
    f.close()
    return f.name

if __name__ == '__main__':
    a, b = sys.argv[2], sys.argv[3]
    ranks = sys.argv[4] if len(sys.argv) > 4 else None
    pa, pb = price(a), price(b)
    print(f'A {a}: TTFT {pa[0]*1e3:.4f} ms TPOT {pa[1]*1e3:.4f} ms')
    print(f'B {b}: TTFT {pb[0]*1e3:.4f} ms TPOT {pb[1]*1e3:.4f} ms')
    groups = collections.OrderedDict()
    for ch in chunks(a) + chunks(b):
        k = key(ch)
        if k[0] == 'op_time' and (ranks is None or k[2] == ranks): groups[k] = 1
        elif k[0] != 'op_time': groups[k] = 1
    for g in groups:
        p = mixed(a, b, g)
        t = price(p)
        os.unlink(p)
        d = t[1] / pa[1] - 1
        if abs(d) > 0.002 or abs(t[0] / pa[0] - 1) > 0.002:
            print(f'A with B\'s {g}: TTFT {t[0]*1e3:.4f} ({t[0]/pa[0]-1:+.1%}) TPOT {t[1]*1e3:.4f} ({d:+.1%})')
