#!/usr/bin/env python3
"""Tables of run.sh's runs: per config and variant (before: main's partbench and
its own calibration; after: this branch's and its own) the median over the
six runs of both variants (three rounds each) of the measured p50 of TTFT,
TPOT and TPS against the median over rounds of the modeled value, error =
(modeled - measured) / measured; the same per variant, its own three runs against
its own three models (where the binaries run differently); the op check, per (config, phase, kind) the
median over runs of measured and modeled time, counted within +-20 % when
|modeled/measured - 1| <= 0.2; per calibration the core wait and receive
wait entries; per round the after-compute op times at 2, 4 and 16 ranks over
those at 1 (median over each kind's entries), and those taken in turns at 4 and
16 ranks over those at once and alone; per calibration the send calls and the replica spreads; for data-parallel configs, TTFT (the later replica's) beside
each replica's own TTFT against the same model; each run's host state. The op check is counted twice: with each
variant's own runs' measured medians (as in earlier sections) and with the
measured median over both variants' runs.
Usage: summarize.py WORKDIR (the folder run.sh filled)"""
import json, os, statistics, sys, tomllib, collections

W = sys.argv[1] if len(sys.argv) > 1 else "/tmp/cpucal4"
CONFIGS = ["single-tiny", "tp2-tiny", "pp2-tiny", "tp2pp2-tiny", "tp2-dp2-tiny", "layerwise16-tiny"]
METRICS = [("ttft", "TTFT (ms)", 1e3), ("tpot", "TPOT (ms)", 1e3), ("tps", "TPS (tok/s)", 1)]
ROUNDS = (1, 2, 3)
COMM = ("all_reduce", "all_gather", "recv", "send")


def calibrations(variants):
    """Each calibration of the pass there is, round by round: (round, variant, its TOML)."""
    for r in ROUNDS:
        for v in variants:
            p = os.path.join(W, f"{v}-{r}.toml")
            if os.path.exists(p):
                with open(p, "rb") as f:
                    yield r, v, tomllib.load(f)


def within(modeled, measured):
    """The op check's test: modeled within 20 % of measured."""
    return abs(modeled / measured - 1) <= 0.2

def load(variant, cfg):
    out = []
    for i in ROUNDS:
        p = os.path.join(W, "out", variant, f"{cfg}-{i}", "results.json")
        if os.path.exists(p):
            out.append(json.load(open(p)))
    return out


def metric(d, name):
    for c in d["comparison"]:
        if c["metric"] == name:
            return c["measured"]["p50"], c["modeled"]
    raise KeyError(name)


print("| config | metric | measured p50, median of 6 runs (all runs) | before: modeled (median of 3) | error | after: modeled | error |")
print("|---|---|---|---|---|---|---|")
for cfg in CONFIGS:
    runs = {v: load(v, cfg) for v in ("after", "before")}
    for name, label, scale in METRICS:
        meas = [metric(d, name)[0] for d in runs["after"] + runs["before"]]
        if not meas:
            continue
        med = statistics.median(meas)
        cells = []
        for v in ("before", "after"):
            if not runs[v]:
                cells += ["—", "—"]
                continue
            mod = statistics.median(metric(d, name)[1] for d in runs[v])
            cells += [f"{mod*scale:.3g}", f"{(mod-med)/med*100:+.1f} %"]
        spread = " / ".join(f"{m*scale:.3g}" for m in sorted(meas))
        print(f"| {cfg} | {label} | {med*scale:.3g} ({spread}) | " + " | ".join(cells) + " |")

# Where the two binaries run differently (a placement, a kernel), the pooled
# measured column above mixes two kinds of run: this table holds each
# variant's own three runs against its own three models.
print()
print("Each variant's own runs against its own models:")
print()
print("| config | metric | before: measured (median of 3) | modeled | error | after: measured | modeled | error |")
print("|---|---|---|---|---|---|---|---|")
for cfg in CONFIGS:
    runs = {v: load(v, cfg) for v in ("before", "after")}
    for name, label, scale in METRICS:
        cells = []
        for v in ("before", "after"):
            if not runs[v]:
                cells += ["—", "—", "—"]
                continue
            meas = statistics.median(metric(d, name)[0] for d in runs[v])
            mod = statistics.median(metric(d, name)[1] for d in runs[v])
            cells += [f"{meas*scale:.3g}", f"{mod*scale:.3g}", f"{(mod-meas)/meas*100:+.1f} %"]
        print(f"| {cfg} | {label} | " + " | ".join(cells) + " |")


def replica_own_ttft(d):
    """Each replica's own TTFT, pooled over replicas and iterations, as
    exec.Aggregate's ttft_replica_s (computed from the ranks, so results of
    a partbench without that field give it too); its lower-middle median."""
    ranks = [r for r in d["measurement"]["ranks"] if r.get("last_stage")]
    if len({r.get("replica", 0) for r in ranks}) < 2:
        return None
    iters = len(ranks[0]["prefill_s"])
    every = d["measurement"]["ranks"]
    pooled = []
    for i in range(iters):
        start = min(r["start_s"][i] for r in every) if all(r.get("start_s") for r in every) else None
        own = {}
        for r in ranks:
            shift = r["start_s"][i] - start if start is not None else 0
            own[r.get("replica", 0)] = max(own.get(r.get("replica", 0), 0), shift + r["prefill_s"][i])
        pooled += own.values()
    pooled.sort()
    return pooled[(len(pooled) - 1) // 2]


print()
print("Data-parallel configs: TTFT is the later replica's; each replica's own TTFT (pooled, p50)")
print("against the same model, per variant (median of its 3 runs):")
print()
print("| config | variant | TTFT p50 (ms) | each replica's own p50 (ms) | later / own | modeled TTFT (ms) | error | one replica modeled (ms) | error vs own |")
print("|---|---|---|---|---|---|---|---|---|")
for cfg in CONFIGS:
    for v in ("before", "after"):
        runs = load(v, cfg)
        owns = [replica_own_ttft(d) for d in runs]
        if not runs or any(o is None for o in owns):
            continue
        later = statistics.median(metric(d, "ttft")[0] for d in runs)
        own = statistics.median(owns)
        mod = statistics.median(metric(d, "ttft")[1] for d in runs)
        # One replica's modeled TTFT: the estimate's replica_ttft_s where it
        # priced the later replica from the profile's spread, else its TTFT.
        one = statistics.median(d["estimate"]["prefill"].get("replica_ttft_s") or metric(d, "ttft")[1] for d in runs)
        print(f"| {cfg} | {v} | {later*1e3:.3g} | {own*1e3:.3g} | {later/own:.3f} | {mod*1e3:.3g} | {(mod-later)/later*100:+.1f} % | {one*1e3:.3g} | {(one-own)/own*100:+.1f} % |")

print()
print("| config | op-check rows within 20 %: before | after |")
print("|---|---|---|")
tot = {"before": [0, 0], "after": [0, 0]}
rows = {"before": [], "after": []}
for cfg in CONFIGS:
    cells = []
    for v in ("before", "after"):
        acc = {}
        for d in load(v, cfg):
            for r in d.get("op_check") or []:
                if r.get("measured_s", 0) <= 0:
                    continue
                k = (r["phase"], r["kind"])
                acc.setdefault(k, ([], []))
                acc[k][0].append(r["measured_s"])
                acc[k][1].append(r["modeled_s"])
        n = ok = 0
        for k, (ms, mods) in acc.items():
            m, mod = statistics.median(ms), statistics.median(mods)
            n += 1
            ok_row = within(mod, m)
            ok += ok_row
            rows[v].append((cfg, k[0], k[1], m, mod, ok_row))
        tot[v][0] += ok
        tot[v][1] += n
        cells.append(f"{ok}/{n}")
    print(f"| {cfg} | " + " | ".join(cells) + " |")
print(f"| all | {tot['before'][0]}/{tot['before'][1]} | {tot['after'][0]}/{tot['after'][1]} |")

print()
print("The same count with each row's measured time the median over both variants' runs (both run the")
print("same executor; above, each variant's own three runs), modeled the variant's median:")
print()
print("| config | op-check rows within 20 % (pooled measured): before | after |")
print("|---|---|---|")
ptot = {"before": [0, 0], "after": [0, 0]}
for cfg in CONFIGS:
    meas, mods = {}, {"before": {}, "after": {}}
    for v in ("before", "after"):
        for d in load(v, cfg):
            for r in d.get("op_check") or []:
                if r.get("measured_s", 0) <= 0:
                    continue
                k = (r["phase"], r["kind"])
                meas.setdefault(k, []).append(r["measured_s"])
                mods[v].setdefault(k, []).append(r["modeled_s"])
    cells = []
    for v in ("before", "after"):
        n = ok = 0
        for k, ms in meas.items():
            if k not in mods[v]:
                continue
            n += 1
            ok += within(statistics.median(mods[v][k]), statistics.median(ms))
        ptot[v][0] += ok
        ptot[v][1] += n
        cells.append(f"{ok}/{n}")
    print(f"| {cfg} | " + " | ".join(cells) + " |")
print(f"| all | {ptot['before'][0]}/{ptot['before'][1]} | {ptot['after'][0]}/{ptot['after'][1]} |")

print()
print("Op-check rows, modeled / measured (median over runs; ** outside 20 %):")
print()
print("| config | phase | kind | measured (µs) | before | after |")
print("|---|---|---|---|---|---|")
before = {(c, p, k): (m, mod) for c, p, k, m, mod, _ in rows["before"]}
for cfg, ph, kind, m, mod, ok_row in rows["after"]:
    b = before.get((cfg, ph, kind))
    bc = "—" if b is None else f"{b[1]/b[0]:.2f}{'' if within(b[1], b[0]) else ' **'}"
    print(f"| {cfg} | {ph} | {kind} | {m*1e6:.1f} | {bc} | {mod/m:.2f}{'' if ok_row else ' **'} |")

print()
print("Waits per calibration (µs; core_wait per message step after the burst shown, recv_wait per hop):")
print()
print("| calibration | ranks | kind | after a burst of (µs): wait (µs) |")
print("|---|---|---|---|")
for r, v, c in calibrations(("before", "after")):
    by = collections.defaultdict(list)
    for e in c.get("op_time", []):
        if e["kind"] in ("core_wait", "recv_wait"):
            by[(e["ranks"], e["kind"])].append(e)
    for (n, kind), es in sorted(by.items()):
        cells = ", ".join(f"{e['size']/1e3:.0f}: {e['time_s']*1e6:.1f}" if e["size"] > 1 else f"—: {e['time_s']*1e6:.1f}"
                          for e in sorted(es, key=lambda e: e["size"]))
        print(f"| {v}-{r} | {n} | {kind} | {cells} |")

print()
print("Send calls and replica spreads per calibration: the Send call to a spinning receiver (send_call) and to a")
print("sleeping one (send_call_asleep) at 256 B (µs), and the later of R replicas over one at each block length:")
print()
print("| calibration | ranks | send_call / send_call_asleep at 256 B (µs) | replica_spread (block ms: ×ratio at R) |")
print("|---|---|---|---|")
for r, v, c in calibrations(("before", "after")):
    by = collections.defaultdict(lambda: {"send": {}, "spread": []})
    for e in c.get("op_time", []):
        if e["kind"] in ("send_call", "send_call_asleep") and e["size"] == 256:
            by[e["ranks"]]["send"][e["kind"]] = e["time_s"]
        elif e["kind"] == "replica_spread":
            by[e["ranks"]]["spread"].append((e["size"], e.get("context", 0), e["time_s"]))
    for n in sorted(by):
        sc = by[n]["send"]
        send = " / ".join(f"{sc[k]*1e6:.2f}" if k in sc else "—" for k in ("send_call", "send_call_asleep"))
        spread = ", ".join(f"{size/1e6:.2g}: ×{t:.3f} at {R}" for size, R, t in sorted(by[n]["spread"])) or "—"
        print(f"| {v}-{r} | {n} | {send} | {spread} |")

print()
print("After: compute op times measured by 2, 4 and 16 processes at once (on the core) over those of one rank alone (median over each kind's entries):")
print()
print("| calibration | ranks | " + " | ".join(["gemm", "attention", "activation", "rmsnorm", "residual", "sample", "input"]) + " |")
print("|---|---|" + "---|" * 7)
for r, _, c in calibrations(("after",)):
    by = collections.defaultdict(dict)
    for e in c.get("op_time", []):
        if e["kind"] in COMM or e["kind"] in ("core_wait", "recv_wait"):
            continue
        by[(e["kind"], e["shape"], e["size"], e.get("context", 0))][e["ranks"]] = e["time_s"]
    for n in (2, 4, 16):
        rs = collections.defaultdict(list)
        for key, d in by.items():
            if 1 in d and n in d:
                rs[key[0]].append(d[n] / d[1])
        cells = [f"{statistics.median(rs[k]):.2f}" if rs[k] else "—" for k in ["gemm", "attention", "activation", "rmsnorm", "residual", "sample", "input"]]
        print(f"| after-{r} | {n} | " + " | ".join(cells) + " |")

print()
print("After: compute op times taken in turns at 4 and 16 ranks over those at once at the same count, and over one rank alone (median over each kind's entries; decode: the entries of one or a few rows, size <= 8):")
print()
KINDS = ["gemm", "attention", "activation", "rmsnorm", "residual", "sample", "input"]
print("| calibration | ranks | over | " + " | ".join(KINDS) + " |")
print("|---|---|---|" + "---|" * len(KINDS))
for r, _, c in calibrations(("after",)):
    by = collections.defaultdict(dict)
    for e in c.get("op_time", []):
        k = e["kind"]
        turns = k.startswith("turns:")
        k = k.removeprefix("turns:")
        if k in COMM or k in ("core_wait", "recv_wait", "core_stretch", "send_call"):
            continue
        by[(k, e["shape"], e["size"], e.get("context", 0))][("T" if turns else "") + str(e["ranks"])] = e["time_s"]
    for n in (4, 16):
        for over, ref, small in (("at once", str(n), False), ("at once, decode", str(n), True), ("alone", "1", False)):
            rs = collections.defaultdict(list)
            for key, d in by.items():
                if "T" + str(n) in d and ref in d and (not small or key[2] <= 8):
                    rs[key[0]].append(d["T" + str(n)] / d[ref])
            cells = [f"{statistics.median(rs[k]):.2f}" if rs[k] else "—" for k in KINDS]
            print(f"| after-{r} | {n} | {over} | " + " | ".join(cells) + " |")

print()
print("Exit lags per calibration (µs per call, a pair's all_reduce from the later partner's arrival to the later exit;")
print("L: every pair computing, L_idle: the other ranks asleep in a receive) and the 2-rank all_reduce back to back")
print("at 256 B and 1 KiB (µs):")
print()
print("| calibration | ranks | kind | after a burst of (µs): at 256 B / 4 KiB / 32 KiB (µs) |")
print("|---|---|---|---|")
for r, v, c in calibrations(("before", "after")):
    by = collections.defaultdict(lambda: collections.defaultdict(dict))
    ar2 = {}
    for e in c.get("op_time", []):
        if e["kind"] in ("core_exit_lag", "core_exit_lag_idle"):
            by[(e["ranks"], e["kind"])][e["context"]][e["size"]] = e["time_s"]
        if e["kind"] == "all_reduce" and e["ranks"] == 2 and e["shape"] == "ranks=2" and e["size"] in (256, 1024):
            ar2[e["size"]] = e["time_s"]
    for (n, kind), bursts in sorted(by.items()):
        cells = "; ".join(f"{b/1e3:.0f}: " + " / ".join(f"{t*1e6:.1f}" for _, t in sorted(s.items())) for b, s in sorted(bursts.items()))
        print(f"| {v}-{r} | {n} | {'L' if kind == 'core_exit_lag' else 'L_idle'} | {cells} |")
    if ar2:
        print(f"| {v}-{r} | 2 | all_reduce back to back | 256 B: {ar2.get(256, 0)*1e6:.2f}, 1 KiB: {ar2.get(1024, 0)*1e6:.2f} |")

print()
print("Each run's host over its measured iterations (results.json's host_state, where the binary records it):")
print("TPOT p50, the 1-minute load at the start and the end, the CPU time busy and stolen by the hypervisor:")
print()
print("| config | run | TPOT p50 (ms) | load | busy | stolen |")
print("|---|---|---|---|---|---|")
for cfg in CONFIGS:
    for v in ("before", "after"):
        for i, d in zip(ROUNDS, load(v, cfg)):
            hs = d.get("host_state") or []
            if not hs:
                continue
            h = hs[0]
            print(f"| {cfg} | {v}-{i} | {metric(d, 'tpot')[0]*1e3:.3f} | {h['load_start']:.2f} → {h['load_end']:.2f} | "
                  f"{100*h['busy_fraction']:.0f} % | {100*h['steal_fraction']:.1f} % |")
