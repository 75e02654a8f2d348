#!/usr/bin/env python3
"""baseline_table.py RESULTS_JSON TORCH_JSONL: partbench against PyTorch on the same shapes, one table.

RESULTS_JSON is partbench run's results.json (run --output-dir), TORCH_JSONL the
lines scripts/torch_baseline.py printed. Writes a markdown table to stdout:
TTFT and TPOT medians of partbench and of each PyTorch mode, and the ratio
partbench / PyTorch (below 1: partbench is faster), with the device, driver and
library versions under it. Needs no torch.
"""
import json
import sys


def main(argv):
    if len(argv) != 3:
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
    rows, info = [], None
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
