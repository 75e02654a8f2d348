#!/usr/bin/env python3
"""Where layerwise16-tiny's TTFT and TPOT go, measured against modeled, from run.sh's runs (TRACE=1).

Usage: lw16.py WORKDIR...

Per run (results.json, every measured iteration; the chain of 16 one-layer stages, one micro-batch):
  TTFT      the median iteration's TTFT (the last stage's prefill end less the earliest start)
  ops       the median over iterations of the 16 stages' op timers summed (prefill compute ops:
            every kind but send and recv), and the sum over stages of each stage's median
            ("rank medians", what the op check compares: each op kind's median per rank)
  rest      TTFT less ops: the 15 hops, the gaps between ops, rank 0's start
  model     the run's estimate: TTFT, its stages' op timers (the modeled timeline of the trace,
            pid 2) and the rest
Decode likewise per step (TPOT p50; ops summed over the stages per step).

Per traced stage (the last iteration only; pid 1 measured, pid 2 modeled), prefill and decode:
  span      a stage's Recv end to its Send start; of it the op timers and the gaps outside them
  hop       the previous stage's Send start to this stage's Recv end
Figures are µs.
"""
import glob
import json
import os
import statistics as st
import sys

COMM = {"send", "recv", "all_reduce", "all_gather"}
med = st.median


def run_rows(path):
    d = json.load(open(os.path.join(path, "results.json")))
    R = d["measurement"]["ranks"]
    n = len(R[0]["prefill_s"])
    steps = d["measurement"]["decode_steps_per_iteration"]
    out = {}
    for ph, div in (("prefill", 1), ("decode", steps)):
        per = [[sum(v[i] for k, v in r["phase_busy_s"][ph].items() if k not in COMM) / div
                for i in range(n)] for r in R]
        out[ph] = (med([sum(p[i] for p in per) for i in range(n)]) * 1e6,
                   sum(med(p) for p in per) * 1e6)
    ttft = med([R[-1]["start_s"][i] + R[-1]["prefill_s"][i] - min(r["start_s"][i] for r in R)
                for i in range(n)]) * 1e6
    return d, ttft, out


def stages(trace, pid, phase):
    ev = json.load(open(trace))
    ev = ev if isinstance(ev, list) else ev["traceEvents"]
    by = {}
    for e in ev:
        if e.get("pid") == pid and e.get("ph") == "X" and e["args"].get("phase") == phase:
            by.setdefault(e["tid"], []).append(e)
    rows = []
    for r in sorted(by):
        es = sorted(by[r], key=lambda e: e["ts"])
        recvs = [e for e in es if e["cat"] == "recv"]
        sends = [e for e in es if e["cat"] == "send"]
        for rv in recvs:
            s0 = rv["ts"] + rv["dur"]
            nxt = [s for s in sends if s["ts"] >= s0]
            if not nxt:
                continue
            s1 = nxt[0]["ts"]
            ops = sum(e["dur"] for e in es if e["cat"] not in COMM and s0 - 0.01 <= e["ts"] < s1)
            # the hop into this stage: the peer's Send with the same step, its start to s0
            peer = rv["args"].get("peer")
            ps = [s for s in by.get(peer, []) if s["cat"] == "send"
                  and s["args"].get("step") == rv["args"].get("step") and s["ts"] <= s0]
            hop = s0 - ps[-1]["ts"] if ps else float("nan")
            rows.append((s1 - s0, ops, s1 - s0 - ops, hop))
    return rows


def main():
    runs, tr = [], {1: {"prefill": [], "decode": []}, 2: {"prefill": [], "decode": []}}
    for w in sys.argv[1:]:
        for res in sorted(glob.glob(os.path.join(w, "out", "*", "layerwise16-tiny-*", "results.json"))):
            path = os.path.dirname(res)
            d, ttft, ops = run_rows(path)
            e = d["estimate"]
            t = path + ".trace.json"
            mops = {"prefill": float("nan"), "decode": float("nan")}
            if os.path.exists(t):
                for ph in ("prefill", "decode"):
                    for pid in (1, 2):
                        tr[pid][ph] += stages(t, pid, ph)
                ev = json.load(open(t))
                ev = ev if isinstance(ev, list) else ev["traceEvents"]
                for ph in ("prefill", "decode"):
                    mops[ph] = sum(x["dur"] for x in ev if x.get("pid") == 2 and x.get("ph") == "X"
                                   and x["cat"] not in COMM and x["args"].get("phase") == ph)
                mops["decode"] /= d["measurement"]["decode_steps_per_iteration"]
            runs.append((os.path.relpath(path, w) + " (" + os.path.basename(os.path.normpath(w)) + ")",
                         ttft, ops, e["prefill"]["ttft_s"] * 1e6, mops,
                         d["measurement"]["tpot_s"]["p50"] * 1e6, e["decode"]["tpot_s"] * 1e6))
    print("| run | TTFT | ops (median of sums / rank medians) | rest | model TTFT | model ops | model rest | TPOT | ops/step | rest/step | model TPOT | model ops/step | model rest/step |")
    print("|---|" + "---|" * 12)
    for name, ttft, ops, mt, mo, tpot, mtpot in runs:
        print("| %s | %.0f | %.0f / %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |" % (
            name, ttft, ops["prefill"][0], ops["prefill"][1], ttft - ops["prefill"][0], mt, mo["prefill"],
            mt - mo["prefill"], tpot, ops["decode"][0], tpot - ops["decode"][0], mtpot, mo["decode"],
            mtpot - mo["decode"]))
    if len(runs) > 1:
        col = lambda f: med([f(r) for r in runs])
        print("| median | %.0f | %.0f / %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |" % (
            col(lambda r: r[1]), col(lambda r: r[2]["prefill"][0]), col(lambda r: r[2]["prefill"][1]),
            col(lambda r: r[1] - r[2]["prefill"][0]), col(lambda r: r[3]), col(lambda r: r[4]["prefill"]),
            col(lambda r: r[3] - r[4]["prefill"]), col(lambda r: r[5]), col(lambda r: r[2]["decode"][0]),
            col(lambda r: r[5] - r[2]["decode"][0]), col(lambda r: r[6]), col(lambda r: r[4]["decode"]),
            col(lambda r: r[6] - r[4]["decode"])))
    print()
    print("Traced iterations (the last of each run), per stage: p50 / mean over stages, µs")
    print()
    print("| phase | stages | span measured | modeled | op timers measured | modeled | gaps measured | modeled | hop measured | modeled |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for ph in ("prefill", "decode"):
        m, o = tr[1][ph], tr[2][ph]
        if not m:
            continue
        f = lambda rows, j: "%.1f / %.1f" % (med([x[j] for x in rows if x[j] == x[j]]),
                                             st.mean([x[j] for x in rows if x[j] == x[j]]))
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            ph, len(m), f(m, 0), f(o, 0), f(m, 1), f(o, 1), f(m, 2), f(o, 2), f(m, 3), f(o, 3)))


main()
