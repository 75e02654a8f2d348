#!/usr/bin/env python3
"""baseline_table.py RESULTS_JSON TORCH_JSONL [TRACE_JSON]: partbench against PyTorch on the same shapes.

RESULTS_JSON is partbench run's results.json (run --output-dir), TORCH_JSONL the
lines scripts/torch_baseline.py printed, TRACE_JSON (optional) the run's
--trace file. Writes a markdown table to stdout: TTFT and TPOT medians of
partbench and of each PyTorch mode, and the ratio partbench / PyTorch (below 1:
partbench is faster), with the device, driver and library versions under it.
With a trace, a second table puts one layer's attention (prefill and decode,
the median over the trace's measured attention rows) beside SDPA alone under
each backend. Needs no torch.
"""
import json
import statistics
import sys


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            pb = json.load(f)
        m = pb["measurement"]
        ours = {"ttft": m["ttft_s"]["p50"], "tpot": m["tpot_s"]["p50"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"baseline_table: {argv[1]}: not a partbench run results.json with measurement.ttft_s/tpot_s.p50: {e!r}", file=sys.stderr)
        return 2
    rows, attn, info = [], [], None
    try:
        with open(argv[2]) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    print(f"baseline_table: {argv[2]}:{n}: not JSON: {e}", file=sys.stderr)
                    return 2
                if r.get("measure") in ("ttft", "tpot"):
                    rows.append(r)
                    info = info or r
                elif r.get("measure", "").startswith("attention_"):
                    attn.append(r)
    except OSError as e:
        print(f"baseline_table: {argv[2]}: {e.strerror}", file=sys.stderr)
        return 2
    if not rows:
        print(f"baseline_table: {argv[2]}: no ttft or tpot lines from torch_baseline.py", file=sys.stderr)
        return 1
    cfg = pb.get("config", {})
    print(f"### {cfg.get('name', '')}: partbench ({pb.get('backend', '')}) vs PyTorch, same shapes\n")
    print("| metric | partbench (median) | PyTorch mode | PyTorch (median) | partbench / PyTorch |")
    print("|---|---|---|---|---|")
    for r in rows:
        a, b = ours[r["measure"]], r["median_s"]
        print(f"| {r['measure'].upper()} | {a * 1e3:,.2f} ms | {r['mode']} | {b * 1e3:,.2f} ms | {a / b:.2f} |")
    w, mo = cfg.get("workload", {}), cfg.get("model", {})
    print(f"\nShapes: {mo.get('layers')} layers, hidden {mo.get('hidden')}, {mo.get('heads')}x{mo.get('head_dim')} heads "
          f"({mo.get('kv_heads')} kv), ffn {mo.get('ffn')}{' gated' if mo.get('gated_mlp') else ''}, {mo.get('dtype')}; "
          f"batch {w.get('batch')}, context {w.get('context')}, {w.get('output_tokens')} output tokens.")
    print(f"partbench: {pb.get('partbench_version', '')}, {'; '.join(pb.get('devices', []))}; "
          f"{m.get('warmup')} warm-up + {m.get('iterations')} iterations.")
    print(f"PyTorch: {info.get('device')}, driver {info.get('driver')}, torch {info.get('torch')}, CUDA {info.get('cuda')}; "
          f"{info.get('warmup')} warm-up + {info.get('iterations')} iterations, CUDA events, medians.")
    if len(argv) == 4:
        return attention_table(argv[3], attn)
    return 0


def trace_attention(path):
    """The median duration in seconds of the measured attention rows of a partbench trace, per
    phase ({"prefill": s, "decode": s}), and how many rows each median is over."""
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {e["pid"]: str(e.get("args", {}).get("name", "")) for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    measured = {p for p, n in names.items() if n.endswith("(measured)")}
    # Decode steps launched as one CUDA graph hold the graph's time on the op
    # that launched it: their op-by-op replay (a process of its own, after
    # the measured iterations) has each op's device time.
    op_by_op = {p for p, n in names.items() if "(op by op" in n}
    by = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "attention":
            continue
        phase = e.get("args", {}).get("phase", "")
        want = op_by_op if phase == "decode" and op_by_op else measured
        if e.get("pid") in want:
            by.setdefault(phase, []).append(e["dur"] / 1e6)  # trace µs
    return {k: (statistics.median(v), len(v)) for k, v in by.items()}


def attention_table(path, attn):
    try:
        ours = trace_attention(path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"baseline_table: {path}: not a partbench trace (traceEvents with measured attention rows): {e!r}",
              file=sys.stderr)
        return 2
    if not ours:
        print(f"baseline_table: {path}: no measured attention rows", file=sys.stderr)
        return 1
    if not attn:
        print("\n(no attention lines from torch_baseline.py: run it without --no-attention)")
        return 0
    print("\n### One layer's attention: partbench's trace beside SDPA alone\n")
    print("| phase | partbench (median, rows) | SDPA backend | SDPA (median) | partbench / SDPA |")
    print("|---|---|---|---|---|")
    for r in attn:
        phase = r["measure"].removeprefix("attention_")
        if phase not in ours:
            continue
        a, n = ours[phase]
        if "skipped" in r:
            print(f"| {phase} | {a * 1e3:,.3f} ms ({n}) | {r['mode']} | refused: {r['skipped']} | — |")
            continue
        b = r["median_s"]
        print(f"| {phase} | {a * 1e3:,.3f} ms ({n}) | {r['mode']} | {b * 1e3:,.3f} ms | {a / b:.2f} |")
    print("\npartbench's rows are the trace's own durations of its attention ops (per layer: prefill from the"
          " measured iteration, decode from the op-by-op replay where the steps ran as graphs); SDPA's are"
          " CUDA-event medians of the call alone.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
