"""Summarise ab.sh output: per transport and build, the goal counts
(p50/floor <= 1.5, p99/p50 <= 3), medians, CPU per step, the neighbour's
rate.  Usage: python3 parse.py FILE [--runs]"""
import sys, statistics as st

def rows(fn):
    for l in open(fn):
        f = l.split()
        r, b, load, t, place = f[0], f[1], float(f[2][5:]), f[3], f[4]
        i = 5
        nb = None
        if f[i].startswith("nb="):
            nb = float(f[i][3:]); i += 1
        name = f[i]
        m = {}
        for j in range(i + 2, len(f) - 1):
            try:
                v = float(f[j])
            except ValueError:
                continue
            m[f[j + 1]] = v
        yield dict(r=int(r), b=b, load=load, t=t, place=place, nb=nb,
                   tr="grpc" if "/grpc" in name else "tcp", m=m)

fn = sys.argv[1]
rs = list(rows(fn))
builds = []
for x in rs:
    if x["b"] not in builds:
        builds.append(x["b"])
loads = [x["load"] for x in rs]
print(f"{fn}: {len(rs)//2} runs, load {min(loads):.2f}-{max(loads):.2f}, {rs[0]['t']}-{rs[-1]['t']}")
med = lambda xs: st.median(xs) if xs else float("nan")
for tr in ["tcp", "grpc"]:
    for b in builds:
        xs = [x for x in rs if x["tr"] == tr and x["b"] == b]
        if not xs:
            continue
        g = lambda k: [x["m"][k] for x in xs if k in x["m"]]
        pf, pp, fp = g("p50/floor"), g("p99/p50"), g("floor-p99/p50")
        line = (f"{tr:4} {b:8} n={len(xs):2} p50/floor med {med(pf):.2f} [{min(pf):.2f}-{max(pf):.2f}] <=1.5: {sum(v <= 1.5 for v in pf):2}/{len(pf)}"
                f" | p99/p50 med {med(pp):.2f} [{min(pp):.2f}-{max(pp):.2f}] <=3: {sum(v <= 3 for v in pp):2}/{len(pp)}"
                f" | floor p99/p50 <=3: {sum(v <= 3 for v in fp):2}"
                f" | over p50/p99 {med(g('overhead-p50-µs')):.1f}/{med(g('overhead-p99-µs')):.1f}"
                f" floor p50/p99 {med(g('floor-p50-µs')):.1f}/{med(g('floor-p99-µs')):.1f}")
        cpu = [k for k in ["client-cpu-µs/step", "server-cpu-µs/step", "client-cpu-µs/floor", "echo-cpu-µs/floor"] if g(k)]
        if cpu:
            line += " | cpu " + " ".join(f"{k.split('-cpu')[0]}{'/step' if 'step' in k else '/floor'} {med(g(k)):.1f}" for k in cpu)
        nbs = [x["nb"] for x in xs if x["nb"]]
        if nbs:
            line += f" | neighbour {med(nbs)/1e3:.0f}k/s"
        print(line)
        if "--runs" in sys.argv:
            print("    p50/floor:", " ".join(f"{v:.2f}" for v in pf))
            print("    p99/p50:  ", " ".join(f"{v:.2f}" for v in pp))
            print("    over p50: ", " ".join(f"{v:.1f}" for v in g("overhead-p50-µs")))
# The neighbour's rate in each build's runs against the before run of the
# same round (ratios in one round, then their median).
nbr = {}
for x in rs:
    if x["nb"] and x["tr"] == "tcp":
        nbr.setdefault(x["r"], {})[x["b"]] = x["nb"]
if nbr:
    for b in builds[1:]:
        rat = [v[b] / v[builds[0]] for v in nbr.values() if b in v and builds[0] in v]
        print(f"neighbour rate {b} / {builds[0]} (same round): median {med(rat):.3f} [{min(rat):.3f}-{max(rat):.3f}]")
