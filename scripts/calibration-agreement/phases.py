#!/usr/bin/env python3
"""Split each rank's traced prefill (or decode step) per micro-batch into where its time goes,
measured against modeled, from run.sh's traces (TRACE=1).

Usage: phases.py WORKDIR CONFIG [VARIANT] [PHASE]   (VARIANT: after (default) or before;
                                                      PHASE: prefill (default) or decode)

Each trace (partbench run --trace) holds the last measured iteration's timeline (pid 1) and the
model's of the same ranks (pid 2). Per rank and micro-batch, the window from the first op's start
to the last op's end of that micro-batch in the phase (decode: per micro-batch and step,
"mb.step") is split into

  compute     the compute ops' time (every kind but the four below)
  ar wait     a collective's time before its group's last member arrived (waiting for a partner;
              the group is ranks TP·k … TP·k + TP − 1, TP from the environment, 2 by default, and
              its k-th call of that name, micro-batch and step on each member)
  ar rest     a collective's time from the last arrival to the rank's exit
  recv        a receive's time (its wait for the message included)
  send        a Send call's time
  gap         the window less all of the above (between two ops: the executor's own time, and on
              a rank that is not scheduled, its time off a core)

and the window's length, µs, median over the traces (n: how many). The windows of one rank's two
micro-batches overlap where the rank interleaves them; in a fill-drain pipeline they do not.
Also per rank: the phase from 0 to its last op's end ("all"), and TTFT (the last stage's end).
"""
import glob
import json
import os
import statistics as st
import sys

COLL = {"all_reduce", "all_gather"}
TP = int(os.environ.get("TP", "2"))  # a collective's group: the TP ranks tid // TP (tp2pp2, tp2-dp2)
COMM = COLL | {"send", "recv"}
PARTS = ("compute", "ar wait", "ar rest", "recv", "send", "gap")


def windows(events, pid, phase):
    xs = [e for e in events if e.get("pid") == pid and e.get("ph") == "X" and e["args"].get("phase") == phase]
    by_rank = {}
    for e in xs:
        by_rank.setdefault(e["tid"], []).append(e)
    for ops in by_rank.values():
        ops.sort(key=lambda e: e["ts"])
    # The last arrival of each collective: its members are the TP group's ranks running a
    # collective of the same name, micro-batch and step, matched by occurrence.
    last = {}
    seen = {}
    for tid, ops in by_rank.items():
        for e in ops:
            if e["cat"] in COLL:
                k = (tid // TP, e["name"], e["args"].get("microbatch"), e["args"].get("step"))
                n = seen.get((tid, k), 0)
                seen[(tid, k)] = n + 1
                key = k + (n,)
                e["_key"] = key
                last[key] = max(last.get(key, float("-inf")), e["ts"])
    out = {}
    for tid, ops in by_rank.items():
        groups = {"all": ops}
        for e in ops:
            mb = e["args"].get("microbatch", 0)
            if phase == "decode":
                mb = f'{mb}.{e["args"].get("step", 0)}'
            groups.setdefault(mb, []).append(e)
        for mb, g in groups.items():
            start, end = min(e["ts"] for e in g), max(e["ts"] + e["dur"] for e in g)
            if mb == "all":
                start = 0.0
            d = dict.fromkeys(PARTS, 0.0)
            for e in g:
                if e["cat"] in COLL:
                    w = max(0.0, min(e["dur"], last[e["_key"]] - e["ts"]))
                    d["ar wait"] += w
                    d["ar rest"] += e["dur"] - w
                elif e["cat"] in ("send", "recv"):
                    d[e["cat"]] += e["dur"]
                else:
                    d["compute"] += e["dur"]
            d["window"] = end - start
            d["start"] = start
            d["end"] = end
            d["gap"] = d["window"] - sum(d[p] for p in PARTS if p != "gap")
            out[(tid, mb)] = d
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: phases.py WORKDIR CONFIG [after|before] [prefill|decode]")
    w, config = sys.argv[1], sys.argv[2]
    variant = sys.argv[3] if len(sys.argv) > 3 else "after"
    phase = sys.argv[4] if len(sys.argv) > 4 else "prefill"
    files = sorted(glob.glob(os.path.join(w, "out", variant, f"{config}-*.trace.json")))
    if not files:
        sys.exit(f"phases.py: no {w}/out/{variant}/{config}-*.trace.json (run run.sh with TRACE=1)")
    pooled = {}
    for fn in files:
        try:
            events = json.load(open(fn))["traceEvents"]
        except (OSError, ValueError, KeyError) as err:
            sys.exit(f"phases.py: {fn}: {err}")
        for pid, side in ((1, "measured"), (2, "modeled")):
            for key, d in windows(events, pid, phase).items():
                for name, v in d.items():
                    pooled.setdefault(key, {}).setdefault(side, {}).setdefault(name, []).append(v)
    cols = ("start", "end", "window") + PARTS
    print(f"{config}, {phase}, {variant}: per rank and micro-batch, µs, median over {len(files)} traces, "
          "measured / modeled\n")
    print("| rank | mb | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for (tid, mb) in sorted(pooled, key=lambda k: (k[0], str(k[1]))):
        m, s = pooled[(tid, mb)].get("measured", {}), pooled[(tid, mb)].get("modeled", {})
        cells = []
        for c in cols:
            a = f"{st.median(m[c]):.0f}" if c in m else "–"
            b = f"{st.median(s[c]):.0f}" if c in s else "–"
            cells.append(f"{a} / {b}")
        print(f"| {tid} | {mb} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
