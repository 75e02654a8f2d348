#!/usr/bin/env python3
"""Decompose the traced iterations of run.sh's runs (TRACE=1) per pipeline hop.

Usage: hops.py WORKDIR [VARIANT]   (VARIANT: after, the default, or before)

Each trace (partbench run --trace) holds the measured timeline (pid 1) and the
model's of the same ranks and steps (pid 2). Per config and phase, over every
traced run of the variant, measured against modeled:

  hop      a message from the sender's Send call's start to the end of the
           receiver's Recv (the flow's two ends): what the chain waits per hop
  span     from a Recv's end to the next Send's start on the same rank: the
           stage's compute between two hops, and of it the gaps between its
           ops (the executor's own time between two op timers)
  gap      between two consecutive compute ops of a rank in one pass (µs)
  call     the sender's time in its Send call, and the share of hops whose
           receiver had returned from its Recv before the sender's call did
           (the woken receiver ran first: the call's length is then not on
           the chain's path)

Figures are µs: p50 and mean over the hops (spans, gaps) pooled over runs.
"""
import glob
import json
import os
import statistics as st
import sys

COMM = {"send", "recv", "all_reduce", "all_gather"}


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def decompose(events, pid):
    ev = [e for e in events if e.get("pid") == pid and e.get("ph") != "M"]
    xs = sorted((e for e in ev if e.get("ph") == "X"), key=lambda e: (e["tid"], e["ts"]))
    out = {}

    def acc(phase, name, val):
        out.setdefault(phase, {}).setdefault(name, []).append(val)

    starts = {e["id"]: e for e in ev if e.get("ph") == "s"}
    ends = {e["id"]: e for e in ev if e.get("ph") == "f"}
    sends = {(e["tid"], e["ts"]): e for e in xs if e["cat"] == "send"}
    for i, s in starts.items():
        f, se = ends.get(i), sends.get((s["tid"], s["ts"]))
        if f is None or se is None:
            continue
        phase = se["args"].get("phase")
        acc(phase, "hop", f["ts"] - s["ts"])
        acc(phase, "call", se["dur"])
        acc(phase, "receiver first", 1.0 if f["ts"] < s["ts"] + se["dur"] else 0.0)
    by_rank = {}
    for e in xs:
        by_rank.setdefault(e["tid"], []).append(e)
    for ops in by_rank.values():
        for a, b in zip(ops, ops[1:]):
            same = a["args"].get("phase") == b["args"].get("phase") and a["args"].get("step") == b["args"].get("step")
            if same and a["cat"] not in COMM and b["cat"] not in COMM:
                acc(a["args"].get("phase"), "gap", b["ts"] - a["ts"] - a["dur"])
        for j, e in enumerate(ops):
            if e["cat"] != "recv":
                continue
            k, comp = j + 1, 0.0
            while k < len(ops) and ops[k]["cat"] not in COMM:
                comp += ops[k]["dur"]
                k += 1
            if k < len(ops) and ops[k]["cat"] == "send" and k > j + 1:
                span = ops[k]["ts"] - (e["ts"] + e["dur"])
                acc(e["args"].get("phase"), "span", span)
                acc(e["args"].get("phase"), "span gaps", span - comp)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: hops.py WORKDIR [after|before]")
    w, variant = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "after")
    files = sorted(glob.glob(os.path.join(w, "out", variant, "*.trace.json")))
    if not files:
        sys.exit(f"hops.py: no {w}/out/{variant}/*.trace.json (run run.sh with TRACE=1)")
    pooled = {}
    for fn in files:
        config = os.path.basename(fn).rsplit("-", 1)[0]
        try:
            events = json.load(open(fn))["traceEvents"]
        except (OSError, ValueError, KeyError) as err:
            sys.exit(f"hops.py: {fn}: {err}")
        for pid, side in ((1, "measured"), (2, "modeled")):
            for phase, d in decompose(events, pid).items():
                for name, vals in d.items():
                    pooled.setdefault((config, phase, name), {}).setdefault(side, []).extend(vals)
    print(f"Per hop, {variant}, µs: p50 / mean over the traced runs ({len(files)} traces)\n")
    print("| config | phase | what | n | measured p50 | measured mean | modeled p50 | modeled mean |")
    print("|---|---|---|---|---|---|---|---|")
    order = {"hop": 0, "span": 1, "span gaps": 2, "gap": 3, "call": 4, "receiver first": 5}
    for (config, phase, name) in sorted(pooled, key=lambda k: (k[0], k[1] != "prefill", order.get(k[2], 9))):
        m, s = pooled[(config, phase, name)].get("measured", []), pooled[(config, phase, name)].get("modeled", [])
        if not m:
            continue
        f = (lambda v: f"{100 * st.mean(v):.0f} %") if name == "receiver first" else (lambda v: f"{st.mean(v):.1f}")
        p = (lambda v: "") if name == "receiver first" else (lambda v: f"{pct(v, 0.5):.1f}")
        print(f"| {config} | {phase} | {name} | {len(m)} | {p(m)} | {f(m)} | {p(s) if s else ''} | {f(s) if s else ''} |")


if __name__ == "__main__":
    main()
