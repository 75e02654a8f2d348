# Partners' arrival skew at tp2pp2-tiny's all-reduces from measured traces.
import json, sys, statistics as st, collections
def load(f):
    d = json.load(open(f))['traceEvents']
    ev = [e for e in d if e['ph'] == 'X' and e['pid'] == 1]
    by = collections.defaultdict(list)
    for e in ev: by[e['tid']].append(e)
    for r in by: by[r].sort(key=lambda e: e['ts'])
    return by
COMM = ('all_reduce', 'all_gather', 'send', 'recv')
rows = []
for f in sys.argv[1:]:
    by = load(f)
    for pair, other in (((0, 1), (2, 3)), ((2, 3), (0, 1))):
        a, b = [by[r] for r in pair]
        # k-th collective of each partner, matched by order
        ca = [i for i, e in enumerate(a) if e['cat'] in ('all_reduce', 'all_gather')]
        cb = [i for i, e in enumerate(b) if e['cat'] in ('all_reduce', 'all_gather')]
        assert len(ca) == len(cb), (f, pair, len(ca), len(cb))
        oth = [e for r in other for e in by[r] if e['cat'] not in COMM]
        for k, (ia, ib) in enumerate(zip(ca, cb)):
            ea, eb = a[ia], b[ib]
            assert ea['name'] == eb['name']
            # segment since previous comm op end
            def seg(lst, i):
                j = i - 1
                while j >= 0 and lst[j]['cat'] not in COMM: j -= 1
                start = lst[j]['ts'] + lst[j]['dur'] if j >= 0 else lst[0]['ts']
                ops = lst[j+1:i]
                return start, sum(o['dur'] for o in ops), ops, (lst[j]['cat'] if j >= 0 else None)
            sa, opa, la, pa = seg(a, ia); sb, opb, lb, pb = seg(b, ib)
            late = 0 if ea['ts'] > eb['ts'] else 1
            skew = abs(ea['ts'] - eb['ts'])
            endboth = max(ea['ts'], eb['ts'])
            fin = max(ea['ts'] + ea['dur'], eb['ts'] + eb['dur'])
            segwall_a, segwall_b = ea['ts'] - sa, eb['ts'] - sb
            # other stage computing during [min arrival - seg, max arrival]
            lo = min(sa, sb); hi = endboth
            ov = sum(max(0, min(hi, o['ts'] + o['dur']) - max(lo, o['ts'])) for o in oth)
            L, E = (la, lb) if late == 0 else (lb, la)
            # biggest contributor: per-op duration difference late - early (matched by name)
            dE = {o['name']: o['dur'] for o in E}
            diffs = sorted(((o['dur'] - dE.get(o['name'], 0), o['name']) for o in L), reverse=True)
            rows.append(dict(f=f, stage=pair[0] // 2, k=k, name=ea['name'], phase=ea['args'].get('phase'),
                late=pair[late], skew=skew, after=fin - endboth,
                start_diff=(sa - sb) if late == 0 else (sb - sa),
                ops_diff=(opa - opb) if late == 0 else (opb - opa),
                gap_diff=((segwall_a - opa) - (segwall_b - opb)) * (1 if late == 0 else -1),
                segwall=max(segwall_a, segwall_b), ov=ov / max(1e-9, hi - lo), prev=pa,
                top=diffs[0] if diffs else None))
class np:
    median = staticmethod(lambda x: st.median(list(x)))
    mean = staticmethod(lambda x: st.mean(list(x)))
    @staticmethod
    def percentile(x, q):
        x = sorted(x); return x[min(len(x) - 1, int(round(q / 100 * (len(x) - 1))))]
def summ(sel, lab):
    if not sel: return
    m = lambda k: np.median([r[k] for r in sel])
    print(f"{lab}: n={len(sel)} skew med {m('skew'):.1f} mean {np.mean([r['skew'] for r in sel]):.1f} | after both in {m('after'):.1f} | late's segment start later by {m('start_diff'):.1f}, its ops longer by {m('ops_diff'):.1f}, its gaps longer by {m('gap_diff'):.1f} | segment wall {m('segwall'):.1f}")
for ph in ('prefill', 'decode'):
    for s in (0, 1):
        for ovl, lab in ((lambda r: r['ov'] <= 0.25, 'alone'), (lambda r: r['ov'] > 0.25, 'overlapped')):
            summ([r for r in rows if r['phase'] == ph and r['stage'] == s and ovl(r)], f"{ph} stage {s} {lab}")
pre = [r for r in rows if r['phase'] == 'prefill']
print("late rank counts prefill:", collections.Counter(r['late'] for r in pre))
print("prefill: top op by which the late partner's ops exceed:", collections.Counter(r['top'][1].split('.',1)[-1] for r in pre if r['top'] and r['skew'] > 20).most_common(8))
print("prefill: prev comm before AR:", collections.Counter(r['prev'] for r in pre))
# skew vs segment wall (burst between all-reduces)
for lo, hi in ((0, 20), (20, 60), (60, 200), (200, 1e9)):
    s = [r['skew'] for r in rows if lo <= r['segwall'] < hi]
    if s: print(f"segment wall {lo}-{hi} µs: n={len(s)} skew median {np.median(s):.1f} p90 {np.percentile(s,90):.1f}")
# share of skew explained
tot = sum(r['skew'] for r in pre)
print("prefill skew explained: start_diff %.2f ops_diff %.2f gap_diff %.2f" % tuple(sum(r[k] for r in pre) / tot for k in ('start_diff', 'ops_diff', 'gap_diff')))
by_name = collections.defaultdict(list)
for r in pre: by_name[r['name'].split('.',1)[1] if r['name'].startswith('L') else r['name']].append(r['skew'])
print({k: round(float(np.median(v)),1) for k, v in by_name.items()})
# Exit skew: partners leaving the same collective apart; does the later leaver arrive later at the next?
print("--- exit skew")
for f in sys.argv[1:]:
    pass
ex = collections.defaultdict(list); same = collections.Counter(); firstout = collections.defaultdict(list)
for f in sys.argv[1:]:
    by = load(f)
    for pair in ((0, 1), (2, 3)):
        a, b = [by[r] for r in pair]
        ca = [e for e in a if e['cat'] in ('all_reduce', 'all_gather')]
        cb = [e for e in b if e['cat'] in ('all_reduce', 'all_gather')]
        prev_late_leaver = None
        for ea, eb in zip(ca, cb):
            ph = ea['args'].get('phase')
            arr_late = pair[0] if ea['ts'] > eb['ts'] else pair[1]
            if prev_late_leaver is not None and ph == 'prefill':
                same[arr_late == prev_late_leaver] += 1
            enda, endb = ea['ts'] + ea['dur'], eb['ts'] + eb['dur']
            ex[(ph, pair[0] // 2)].append(abs(enda - endb))
            firstout[(ph, pair[0] // 2)].append(min(enda, endb) - max(ea['ts'], eb['ts']))
            # late leaver: was it the early or the late arriver?
            prev_late_leaver = pair[0] if enda > endb else pair[1]
for k in sorted(ex):
    print(k, "exit skew median %.1f mean %.1f; both in → first out median %.1f" % (np.median(ex[k]), np.mean(ex[k]), np.median(firstout[k])))
print("prefill: the later arriver is the previous collective's later leaver:", dict(same))
# Is a collective's later leaver its later arriver (lateness carried on) or its earlier one?
ll = collections.Counter()
for f in sys.argv[1:]:
    by = load(f)
    for pair in ((0, 1), (2, 3)):
        ca = [e for e in by[pair[0]] if e['cat'] in ('all_reduce', 'all_gather')]
        cb = [e for e in by[pair[1]] if e['cat'] in ('all_reduce', 'all_gather')]
        for ea, eb in zip(ca, cb):
            if ea['args'].get('phase') != 'prefill': continue
            late_arr = 0 if ea['ts'] > eb['ts'] else 1
            late_leave = 0 if ea['ts'] + ea['dur'] > eb['ts'] + eb['dur'] else 1
            ll['later leaver = later arriver' if late_arr == late_leave else 'later leaver = earlier arriver'] += 1
print("prefill:", dict(ll))
