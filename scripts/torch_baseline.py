#!/usr/bin/env python3
"""torch_baseline.py: the shapes of a partbench config, run in PyTorch, for a fair comparison.

One GPU runs the whole model of a partbench config (every layer, TP = PP = 1)
in the config's precision:

  * prefill of batch x prompt tokens (prompt = context - output_tokens) in
    eager PyTorch with scaled_dot_product_attention (causal): TTFT;
  * decode steps with a KV cache, eager: TPOT (eager);
  * the same decode step captured once in a CUDA graph (torch.cuda.CUDAGraph)
    and replayed: TPOT (cuda_graph), the fair comparison for partbench's
    graph-launched decode;
  * one layer's attention alone, prefill and one decode step, under each
    SDPA backend that accepts the shapes (default dispatch, flash,
    memory-efficient, cuDNN): beside partbench's per-op trace rows.

Layers are Llama-style as partbench's (RMSNorm, fused QKV, rotary embedding,
GQA attention, output projection, gated SiLU or GELU MLP, residuals), with the
token embedding and LM head when the config has them. Weights are random (the
values do not change the time). Each measurement: warm-up iterations, then
medians over the measured iterations, timed with CUDA events on the current
stream. Prints one JSON line per measurement with the device, driver, torch
and CUDA versions.

Shapes come from (first match wins per field): command-line flags, a partbench
results.json (--results: its resolved "config"), or a config TOML (--config;
a [model] preset is read from configs/model/<preset>.toml beside it or in
--presets). --dry-run prints the shapes and the work per measurement as JSON
and needs no torch.

    python3 scripts/torch_baseline.py --config OUT/single-gpu-seed.toml --presets configs/model
    python3 scripts/torch_baseline.py --results OUT/single-gpu-seed/results.json
"""

import argparse
import json
import os
import statistics
import sys

try:
    import tomllib  # Python >= 3.11
except ImportError:  # pragma: no cover
    tomllib = None

FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated_mlp", "vocab",
          "embeddings", "lm_head", "dtype", "batch", "context", "output_tokens")
DTYPES = ("fp16", "bf16", "fp32")


class ShapeError(Exception):
    pass


def _load_toml(path):
    if tomllib is None:
        raise ShapeError(f"{path}: reading TOML needs Python 3.11 (tomllib); pass the shapes as flags")
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ShapeError(f"{path}: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise ShapeError(f"{path}: {e}") from e


def shapes_from_config(path, presets):
    """The [model] and [workload] fields of a partbench config TOML."""
    cfg = _load_toml(path)
    model = dict(cfg.get("model", {}))
    preset = model.pop("preset", None)
    if preset:
        dirs = [presets] if presets else [os.path.join(os.path.dirname(path) or ".", "model"),
                                          os.path.join("configs", "model")]
        for d in dirs:
            p = os.path.join(d, preset + ".toml")
            if os.path.exists(p):
                base = _load_toml(p)
                base.update(model)  # the config's own fields override the preset's
                model = base
                break
        else:
            raise ShapeError(f"{path}: model.preset = {preset!r}: no {preset}.toml in {', '.join(dirs)} "
                             "(pass --presets DIR, the repository's configs/model)")
    out = {k: model[k] for k in FIELDS if k in model}
    out.update({k: v for k, v in cfg.get("workload", {}).items() if k in FIELDS})
    if "name" in cfg:
        out["name"] = cfg["name"]
    return out


def shapes_from_results(path):
    """The resolved config of a partbench results.json (run --output-dir)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise ShapeError(f"{path}: {e.strerror}") from e
    except ValueError as e:
        raise ShapeError(f"{path}: not JSON: {e}") from e
    cfg = doc.get("config")
    if not isinstance(cfg, dict):
        raise ShapeError(f"{path}: no \"config\" object (is it a partbench run results.json?)")
    out = {k: v for k, v in cfg.get("model", {}).items() if k in FIELDS}
    out.update({k: v for k, v in cfg.get("workload", {}).items() if k in FIELDS})
    out["name"] = cfg.get("name", "")
    return out


def resolve(args):
    s = {"kv_heads": 0, "gated_mlp": True, "embeddings": False, "lm_head": False, "vocab": 0, "dtype": "fp16"}
    if args.results:
        s.update(shapes_from_results(args.results))
    if args.config:
        s.update(shapes_from_config(args.config, args.presets))
    for k in FIELDS:
        v = getattr(args, k, None)
        if v is not None:
            s[k] = v
    missing = [k for k in ("layers", "hidden", "heads", "head_dim", "ffn", "batch", "context", "output_tokens")
               if not s.get(k)]
    if missing:
        raise ShapeError("missing shape fields: " + ", ".join(missing) +
                         " (give --config, --results or the flags --" + ", --".join(m.replace("_", "-") for m in missing) + ")")
    if not s["kv_heads"]:
        s["kv_heads"] = s["heads"]
    if s["dtype"] not in DTYPES:
        raise ShapeError(f"dtype = {s['dtype']!r}: must be one of {', '.join(DTYPES)}")
    if s["heads"] % s["kv_heads"]:
        raise ShapeError(f"heads = {s['heads']} is not a multiple of kv_heads = {s['kv_heads']}")
    if not 0 < s["output_tokens"] < s["context"]:
        raise ShapeError(f"output_tokens = {s['output_tokens']}: must be in [1, context = {s['context']})")
    if (s["embeddings"] or s["lm_head"]) and s["vocab"] <= 0:
        raise ShapeError("embeddings or lm_head need vocab > 0")
    s["prompt"] = s["context"] - s["output_tokens"]
    s["decode_steps"] = s["output_tokens"] - 1
    return s


def work(s):
    """Weight bytes and prefill FLOPs (matrix products and attention), as a sanity line."""
    h, hd, H, KV, f, L = s["hidden"], s["head_dim"], s["heads"], s["kv_heads"], s["ffn"], s["layers"]
    esize = {"fp16": 2, "bf16": 2, "fp32": 4}[s["dtype"]]
    per_layer = h * (H + 2 * KV) * hd + H * hd * h + (3 if s["gated_mlp"] else 2) * h * f
    params = L * per_layer + (s["vocab"] * h if s["embeddings"] else 0) + (s["vocab"] * h if s["lm_head"] else 0)
    tokens = s["batch"] * s["prompt"]
    gemm = 2 * tokens * L * per_layer + (2 * s["batch"] * h * s["vocab"] if s["lm_head"] else 0)
    # causal attention: QK^T and PV over S(S+1)/2 pairs per head
    attn = L * s["batch"] * H * 2 * 2 * hd * s["prompt"] * (s["prompt"] + 1) // 2
    kv = L * 2 * s["batch"] * s["context"] * KV * hd * esize
    return {"weight_bytes": params * esize, "kv_cache_bytes": kv, "prefill_flops": gemm + attn}


# ---- the torch part: torch is imported only here, so --dry-run and py_compile need none ----

def _device_info(torch):
    dev = torch.cuda.current_device()
    p = torch.cuda.get_device_properties(dev)
    info = {"device": p.name, "sm": f"{p.major}.{p.minor}", "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    try:  # the driver version, through NVML when present
        import subprocess
        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", str(dev)],
                                        capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        info["driver"] = f"unknown ({e.__class__.__name__})"
    return info


def run(s, args):
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("torch_baseline: torch sees no CUDA device", file=sys.stderr)
        return 3
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[s["dtype"]]
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # partbench's fp32 GEMMs use no TF32 either
    B, P, C = s["batch"], s["prompt"], s["context"]
    h, H, KV, hd, f, L = s["hidden"], s["heads"], s["kv_heads"], s["head_dim"], s["ffn"], s["layers"]
    g = torch.Generator(device=dev).manual_seed(1)

    def w(*shape):
        return (torch.randn(*shape, device=dev, generator=g, dtype=torch.float32) * shape[-1] ** -0.5).to(dt)

    layers = []
    for _ in range(L):
        layers.append({
            "n1": torch.ones(h, device=dev, dtype=dt), "n2": torch.ones(h, device=dev, dtype=dt),
            "qkv": w((H + 2 * KV) * hd, h), "o": w(h, H * hd),
            "up": w((2 if s["gated_mlp"] else 1) * f, h), "down": w(h, f),
        })
    emb = w(s["vocab"], h) if s["embeddings"] else None
    head = w(s["vocab"], h) if s["lm_head"] else None
    nf = torch.ones(h, device=dev, dtype=dt)
    # rotary tables for every position, fp32
    inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
    ang = torch.outer(torch.arange(C, device=dev, dtype=torch.float32), inv)
    cos, sin = ang.cos(), ang.sin()
    # the KV cache: [layer][B][KV][C][hd], filled by prefill, appended by decode
    kc = torch.zeros(L, B, KV, C, hd, device=dev, dtype=dt)
    vc = torch.zeros_like(kc)
    rep = H // KV

    def rms(x, wt):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dt) * wt

    def rope(x, c, si):  # x [B][heads][S][hd], c/si [S][hd/2]
        x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
        return torch.stack((x1 * c - x2 * si, x1 * si + x2 * c), -1).flatten(-2).to(dt)

    def mlp(x, lw):
        u = F.linear(x, lw["up"])
        if s["gated_mlp"]:
            gate, up = u.chunk(2, -1)
            a = F.silu(gate) * up
        else:
            a = F.gelu(u, approximate="tanh")
        return F.linear(a, lw["down"])

    def inputs(n):
        if emb is not None:
            return emb[torch.randint(0, s["vocab"], (B, n), device=dev, generator=g)]
        return torch.randn(B, n, h, device=dev, generator=g, dtype=torch.float32).to(dt)

    x_prompt = inputs(P)

    def prefill():
        x = x_prompt
        c, si = cos[:P], sin[:P]
        for i, lw in enumerate(layers):
            q, k, v = F.linear(rms(x, lw["n1"]), lw["qkv"]).split([H * hd, KV * hd, KV * hd], -1)
            q = rope(q.view(B, P, H, hd).transpose(1, 2), c, si)
            k = rope(k.view(B, P, KV, hd).transpose(1, 2), c, si)
            v = v.view(B, P, KV, hd).transpose(1, 2)
            kc[i, :, :, :P] = k
            vc[i, :, :, :P] = v
            if rep > 1:
                k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + F.linear(a.transpose(1, 2).reshape(B, P, H * hd), lw["o"])
            x = x + mlp(rms(x, lw["n2"]), lw)
        x = rms(x[:, -1], nf)
        return F.linear(x, head) if head is not None else x

    x_step = inputs(1)
    pos_dev = torch.zeros((), device=dev, dtype=torch.long)
    ar = torch.arange(C, device=dev)

    def decode(pos, graphed):
        """One decode step at position pos (a Python int eager; pos_dev when graphed: the whole
        cache is read under a mask, so one captured graph serves every position)."""
        x = x_step
        if graphed:
            c, si = cos.index_select(0, pos_dev.view(1)), sin.index_select(0, pos_dev.view(1))
            mask = (ar <= pos_dev).view(1, 1, 1, C)
        else:
            c, si = cos[pos:pos + 1], sin[pos:pos + 1]
        for i, lw in enumerate(layers):
            q, k, v = F.linear(rms(x, lw["n1"]), lw["qkv"]).split([H * hd, KV * hd, KV * hd], -1)
            q = rope(q.view(B, 1, H, hd).transpose(1, 2), c, si)
            k = rope(k.view(B, 1, KV, hd).transpose(1, 2), c, si)
            v = v.view(B, 1, KV, hd).transpose(1, 2)
            if graphed:
                kc[i].index_copy_(2, pos_dev.view(1), k)
                vc[i].index_copy_(2, pos_dev.view(1), v)
                K, V = kc[i], vc[i]
            else:
                kc[i, :, :, pos:pos + 1] = k
                vc[i, :, :, pos:pos + 1] = v
                K, V = kc[i, :, :, :pos + 1], vc[i, :, :, :pos + 1]
            if rep > 1:
                K, V = K.repeat_interleave(rep, 1), V.repeat_interleave(rep, 1)
            if graphed:
                a = F.scaled_dot_product_attention(q, K, V, attn_mask=mask)
            else:
                a = F.scaled_dot_product_attention(q, K, V)
            x = x + F.linear(a.transpose(1, 2).reshape(B, 1, H * hd), lw["o"])
            x = x + mlp(rms(x, lw["n2"]), lw)
        x = rms(x[:, -1], nf)
        return F.linear(x, head) if head is not None else x

    info = _device_info(torch)
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731

    def timed(fn):
        a, b = ev(), ev()
        a.record()
        fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) / 1e3

    def emit(measure, mode, xs, note):
        print(json.dumps({"measure": measure, "mode": mode, "config": s.get("name", ""), "dtype": s["dtype"],
                          "batch": B, "prompt": P, "context": C, "layers": L, "n": len(xs),
                          "median_s": statistics.median(xs), "min_s": min(xs), "max_s": max(xs),
                          "warmup": args.warmup, "iterations": args.iterations, "note": note, **info}), flush=True)

    total = args.warmup + args.iterations
    with torch.inference_mode():
        ttft, tpot = [], []
        for it in range(total):
            t = timed(prefill)
            steps = [timed(lambda p=P + k: decode(p, False)) for k in range(s["decode_steps"])]
            if it >= args.warmup:
                ttft.append(t)
                tpot.extend(steps)
        emit("ttft", "eager", ttft, "prefill of batch x prompt tokens, SDPA causal, eager")
        if tpot:
            emit("tpot", "eager", tpot, "decode step over the cache [0, pos], eager (host launches included)")
        if not args.no_graph and s["decode_steps"] > 0:
            prefill()
            # warm up on a side stream (what torch.cuda.graphs asks), then capture one step
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    pos_dev.fill_(P)
                    decode(None, True)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                decode(None, True)
            gt = []
            for it in range(total):
                prefill()
                for k in range(s["decode_steps"]):
                    def step(p=P + k):
                        pos_dev.fill_(p)
                        graph.replay()
                    t = timed(step)
                    if it >= args.warmup:
                        gt.append(t)
            emit("tpot", "cuda_graph", gt, "decode step replayed as one CUDA graph; attention reads the whole "
                 "cache [0, context) under a mask (one graph for every position)")
        if not args.no_attention:
            attention_ops(s, args, torch, F, dt, dev, timed, emit)
    return 0


def attention_ops(s, args, torch, F, dt, dev, timed, emit):
    """One layer's attention alone, as SDPA runs it: prefill (causal, batch x heads x prompt) and one
    decode step (one query against the cache [0, prompt]), under each SDPA backend this torch has
    that accepts the shapes. Per layer, so it sits beside partbench's per-op trace rows."""
    B, P, H, KV, hd = s["batch"], s["prompt"], s["heads"], s["kv_heads"], s["head_dim"]
    g = torch.Generator(device=dev).manual_seed(2)

    def rnd(*shape):
        return torch.randn(*shape, device=dev, generator=g, dtype=torch.float32).to(dt)

    q, k, v = rnd(B, H, P, hd), rnd(B, KV, P, hd), rnd(B, KV, P, hd)
    qd = rnd(B, H, 1, hd)
    if KV != H:  # SDPA's kernels take equal heads here: GQA expanded once, outside the timing
        k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = [("sdpa_default", None), ("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                    ("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)]
    except ImportError:  # older torch: the default dispatch only
        sdpa_kernel, backends = None, [("sdpa_default", None)]
    import contextlib
    total = args.warmup + args.iterations
    for mode, be in backends:
        ctx = (lambda: contextlib.nullcontext()) if be is None else (lambda b=be: sdpa_kernel(b))
        for measure, fn, note in (
                ("attention_prefill", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 "one layer's causal attention over the prompt, alone"),
                ("attention_decode", lambda: F.scaled_dot_product_attention(qd, k, v),
                 "one layer's decode attention: one query per sequence against the cache [0, prompt), alone")):
            try:
                with ctx():
                    xs = [timed(fn) for _ in range(total)][args.warmup:]
            except RuntimeError as e:  # this backend refuses the shape or dtype: say so, go on
                print(json.dumps({"measure": measure, "mode": mode, "skipped": str(e).splitlines()[0][:200]}), flush=True)
                continue
            emit(measure, mode, xs, note)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", help="partbench config TOML")
    ap.add_argument("--presets", help="folder of model presets (configs/model) for a config's [model] preset")
    ap.add_argument("--results", help="partbench results.json whose resolved config gives the shapes")
    for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "batch", "context", "output_tokens"):
        ap.add_argument("--" + k.replace("_", "-"), dest=k, type=int)
    for k in ("gated_mlp", "embeddings", "lm_head"):
        ap.add_argument("--" + k.replace("_", "-"), dest=k, action=argparse.BooleanOptionalAction, default=None)
    ap.add_argument("--dtype", choices=DTYPES)
    ap.add_argument("--warmup", type=int, default=1, help="warm-up iterations (default 1)")
    ap.add_argument("--iterations", type=int, default=3, help="measured iterations (default 3)")
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph decode")
    ap.add_argument("--no-attention", action="store_true",
                    help="skip the per-layer attention measurements (SDPA alone, per backend)")
    ap.add_argument("--dry-run", action="store_true", help="print the shapes and work as JSON; no torch needed")
    args = ap.parse_args(argv)
    if args.warmup < 0 or args.iterations < 1:
        ap.error(f"--warmup {args.warmup} --iterations {args.iterations}: need warmup >= 0 and iterations >= 1")
    try:
        s = resolve(args)
    except ShapeError as e:
        print(f"torch_baseline: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(json.dumps({"measure": "shapes", **s, **work(s)}, sort_keys=True))
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch_baseline: PyTorch is not installed (pip install torch); --dry-run needs no torch", file=sys.stderr)
        return 3
    return run(s, args)


if __name__ == "__main__":
    sys.exit(main())
