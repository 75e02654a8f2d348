#!/usr/bin/python3
"""Run one partbench CPU run with 4 local ranks, optionally pin each rank's threads to a CPU
from outside (placement given as CPU per local rank, e.g. 0,0,1,1), sample where each rank's
runnable threads sit every ~2 ms, and print one JSON line: TTFT/TPOT p50, prefill all-reduce
per call (median over ranks x iterations), and pair co-location from the samples.
Usage: place.py BIN CONFIG OUTDIR PLACEMENT(none|c0,c1,c2,c3) [BIND(none|auto)]"""
import json, os, subprocess, sys, time, statistics

bin_, cfg, out, plc = sys.argv[1:5]
bind = sys.argv[5] if len(sys.argv) > 5 else "none"
place = None if plc == "none" else [int(x) for x in plc.split(",")]
cmd = [bin_, "run", "--nproc-per-node", "4", "--config", cfg, "--backend", "cpu",
       "--iterations", os.environ.get("ITERS", "30"), "--warmup", "3", "--quiet", "--output-dir", out, "--bind-to", bind]
cal = os.environ.get("CAL")
if cal:
    cmd += ["--calibration", cal]
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

def children():
    ranks = {}
    kids = []
    for k in os.listdir("/proc"):
        if not k.isdigit():
            continue
        try:
            st = open(f"/proc/{k}/stat").read()
        except OSError:
            continue
        if int(st[st.rfind(")") + 2:].split()[1]) == p.pid:
            kids.append(k)
    for k in kids:
        try:
            env = open(f"/proc/{k}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        for e in env:
            if e.startswith(b"LOCAL_RANK="):
                ranks[int(e[11:])] = int(k)
    return ranks

ranks = {}
t0 = time.time()
pinned = {}
first4 = None
SAMPLE = float(os.environ.get("SAMPLE_MS", "2"))
samples = []  # per sample: {rank: set of cpus with R threads}
while p.poll() is None:
    if len(ranks) < 4:
        ranks = children()
    s = {}
    for r, pid in ranks.items():
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        cpus = set()
        for t in tids:
            if place is not None and (pid, t) not in pinned:
                try:
                    os.sched_setaffinity(int(t), {place[r]})
                    pinned[(pid, t)] = 1
                except OSError:
                    pass
            try:
                st = open(f"/proc/{pid}/task/{t}/stat").read()
            except OSError:
                continue
            f = st[st.rfind(")") + 2:].split()
            if f[0] == "R":
                cpus.add(int(f[36]))  # field 39 (processor); f[0] is field 3
        s[r] = cpus
    if len(s) == 4:
        samples.append(s)
        if first4 is None:
            first4 = time.time()
    if SAMPLE == 0 and first4 is not None and time.time() - first4 > 0.15:
        p.wait()
        break
    time.sleep(SAMPLE / 1000 if SAMPLE else 0.002)
err = p.stderr.read().decode()
rc = p.returncode
res = {"rc": rc, "place": plc, "cfg": cfg}
try:
    d = json.load(open(os.path.join(out, "results.json")))
    m = d["measurement"]
    res["ttft_ms"] = m["ttft_s"]["p50"] * 1e3
    res["tpot_ms"] = m["tpot_s"]["p50"] * 1e3
    per = []
    for rk in m["ranks"]:
        n = rk["prefill_counts"]["calls"].get("all_reduce", 0) / m["iterations"]
        if n:
            per += [x / n * 1e6 for x in rk["phase_busy_s"]["prefill"]["all_reduce"]]
    res["ar_us"] = statistics.median(per) if per else None
    res["notes"] = [x for x in d["notes"] if "bind" in x]
except Exception as e:
    res["err"] = str(e) + err[-300:]
# co-location: samples where both ranks of a pair are runnable, share on one CPU
def coloc(a, b):
    both = [s for s in samples if s.get(a) and s.get(b)]
    same = [s for s in both if s[a] & s[b]]
    return len(same), len(both)
res["n_samples"] = len(samples)
res["pair01_same"] = coloc(0, 1)
res["pair23_same"] = coloc(2, 3)
res["pair02_same"] = coloc(0, 2)
# per rank fraction of runnable samples on cpu0
res["cpu0_frac"] = [round(sum(1 for s in samples if 0 in s.get(r, ())) / max(1, sum(1 for s in samples if s.get(r))), 2) for r in range(4)]
print(json.dumps(res))
