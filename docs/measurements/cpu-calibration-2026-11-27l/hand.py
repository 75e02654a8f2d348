"""tp2pp2-tiny's prefill priced by hand per stage and micro-batch from the model's own ops.

Usage (from the repository root): hand.py WITH WITHOUT PROFILE...
  WITH     a partbench binary that charges the partner behind (main 'a3c933c')
  WITHOUT  one that does not where ranks are bound two to a CPU (branch fill '710d7c7')
Per profile: stage 0's first micro-batch's compute, each all-reduce's burst before it and its
charge without the partner behind (t + 2W: link and the two message steps' core waits), the
partner behind's W (the difference), their sum per stage-micro-batch, and TTFT both ways.
"""
import json, os, sys, subprocess, tempfile
WITH, WITHOUT = sys.argv[1], sys.argv[2]
TRACE = os.path.join(tempfile.mkdtemp(), "t.json")
# per profile: the model's stage-0 micro-batch, by hand from the traced model's ops: compute sum, each all-reduce's
# charge with (main) and without (variant) the partner behind; W per collective = the difference
def ops(binary, prof):
    subprocess.run([binary,"model","--dry-run","--config","configs/test/tp2pp2-tiny.toml","--calibration",prof,"--trace",TRACE],capture_output=True,check=True)
    ev=[e for e in json.load(open(TRACE))["traceEvents"] if e.get("ph")=="X" and e["args"].get("phase")=="prefill" and e["tid"]==0 and e["args"].get("microbatch")==0]
    ev.sort(key=lambda e:e["ts"]); return ev
print("| profile | compute, stage 0 mb | attn.ar: burst, t + 2W, W | mlp.ar: burst, t + 2W, W | embed.ar: t + 2W, W | stage-mb: compute + Σ(t + 2W) + Σ W + send | TTFT main / without W_late |")
print("|---|---|---|---|---|---|---|")
for prof in sys.argv[3:]:
    a=ops(WITH,prof); b=ops(WITHOUT,prof)
    comp=sum(e["dur"] for e in a if e["cat"] not in ("all_reduce","all_gather","send","recv"))
    send=sum(e["dur"] for e in a if e["cat"]=="send")
    burst=0; rows={}
    sumt2w=sumw=0
    for x,y in zip(a,b):
        if x["cat"]=="all_reduce":
            rows.setdefault(x["name"].split(".")[-2] if x["name"]!="embed.ar" else "embed",(burst,y["dur"],x["dur"]-y["dur"]))
            sumt2w+=y["dur"]; sumw+=x["dur"]-y["dur"]; burst=0
        elif x["cat"] not in ("send","recv"): burst+=x["dur"]
    def ttft(binary):
        out=subprocess.run([binary,"model","--dry-run","--config","configs/test/tp2pp2-tiny.toml","--calibration",prof,"--format","json"],capture_output=True,check=True).stdout
        return json.loads(out)["strategies"][0]["prefill"]["ttft_s"]*1e3
    at=rows["attn"]; ml=rows["mlp"]; em=rows["embed"]
    print(f"| {prof} | {comp:.0f} | {at[0]:.1f}, {at[1]:.1f}, {at[2]:.1f} | {ml[0]:.1f}, {ml[1]:.1f}, {ml[2]:.1f} | {em[1]:.1f}, {em[2]:.1f} | {comp:.0f} + {sumt2w:.0f} + {sumw:.0f} + {send:.0f} = {comp+sumt2w+sumw+send:.0f} | {ttft(WITH):.3f} / {ttft(WITHOUT):.3f} |")
