"""tp2pp2-tiny's traced prefill per trace (not the median): per stage and micro-batch the later
rank's window (stage 1's first from the end of its receive), and the mean per rank of the
collectives' time (ar wait + ar rest, phases.py's split), measured (pid 1) and modeled (pid 2).

Usage: pertrace.py WORKDIR   (run.sh's WORKDIR, run with TRACE=1)
"""
import os
import sys, json, glob
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'scripts', 'calibration-agreement'))
import phases
W = sys.argv[1]
print("| trace | pid | s0 mb0 (fill) | s0 mb1 | s1 mb0 after its recv | s1 mb1 (drain) | coll per rank-mb (ar wait + rest), s0 mb0 / s0 mb1 / s1 mb0 / s1 mb1 | prefill end |")
print("|---|---|---|---|---|---|---|---|")
for v in ("before", "after"):
    for fn in sorted(glob.glob(f"{W}/out/{v}/tp2pp2-tiny-*.trace.json")):
        ev = json.load(open(fn))["traceEvents"]
        for pid in (1, 2):
            w = phases.windows(ev, pid, "prefill")
            def mx(f, ranks, mb): return max(f(w[(r, mb)]) for r in ranks)
            def mean(f, ranks, mb): return sum(f(w[(r, mb)]) for r in ranks) / len(ranks)
            win = lambda d: d["window"]
            post = lambda d: d["window"] - d["recv"]
            coll = lambda d: d["ar wait"] + d["ar rest"]
            end = max(w[(r, "all")]["end"] for r in (2, 3))
            cells = [f"{mx(win,(0,1),0):.0f}", f"{mx(win,(0,1),1):.0f}", f"{mx(post,(2,3),0):.0f}", f"{mx(win,(2,3),1):.0f}",
                     " / ".join(f"{mean(coll,rs,mb):.0f}" for rs, mb in (((0,1),0),((0,1),1),((2,3),0),((2,3),1))), f"{end:.0f}"]
            print(f"| {v} {fn.rsplit('-',1)[1].split('.')[0]} | {'measured' if pid==1 else 'modeled'} | " + " | ".join(cells) + " |")
