#!/usr/bin/env python3
"""What LTX-Video 2B's matrix products and attention calls cost on the GPU, each alone, at the
end-to-end setting's shapes (49 frames 768x512, batch 1 x2 for CFG: 5376 rows of 2048; 128 text
tokens a sample): for each call, the kernels and memsets one call issues (torch.profiler) and its
time in a CUDA graph of --calls calls (CUDA events, median of --replays replays).

The end-to-end profiles (PERFORMANCE.md, issue 5) show a memset before every large matrix
product and every attention call of a step (225 a step under torch.compile, each a node of the
step's graph); this probe says which library call issues them and what a call costs with and
without them. Run it in one process per environment, e.g.

    python tools/gemm_attention_probe.py --tag default
    CUBLASLT_WORKSPACE_SIZE=0 python tools/gemm_attention_probe.py --tag lt-ws0

(CUBLASLT_WORKSPACE_SIZE, in KiB, is read once by PyTorch: a fresh process per setting).

The `llama` cases are LLaMA-8B's projections at 4096 prompt tokens, each alone and fused as
`integrations.fuse_projections` fuses them (q / k / v: 4096 + 1024 + 1024 columns; gate / up:
2 x 14336), for what one product saves over the separate ones (`--only llama`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Callable, Dict, List

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROWS, HIDDEN, FF, TEXT, HEADS, HEAD_DIM, BATCH = 5376, 2048, 8192, 128, 32, 64, 2


def cases(dtype: torch.dtype) -> Dict[str, Callable[[], torch.Tensor]]:
    dev = "cuda"

    def t(*shape):
        return torch.randn(*shape, device=dev, dtype=dtype) * 0.05

    x, h = t(ROWS, HIDDEN), t(ROWS, FF)
    w_qkv, b_qkv = t(3 * HIDDEN, HIDDEN), t(3 * HIDDEN)
    w_proj, b_proj = t(HIDDEN, HIDDEN), t(HIDDEN)
    w_up, b_up = t(FF, HIDDEN), t(FF)
    w_down, b_down = t(HIDDEN, FF), t(HIDDEN)
    text, w_kv, b_kv = t(BATCH * TEXT, HIDDEN), t(2 * HIDDEN, HIDDEN), t(2 * HIDDEN)
    seq = ROWS // BATCH
    # q, k, v as diffusers' native attention passes them: [B, S, H, D] transposed to [B, H, S, D]
    q = t(BATCH, seq, HEADS, HEAD_DIM).transpose(1, 2)
    k = t(BATCH, seq, HEADS, HEAD_DIM).transpose(1, 2)
    v = t(BATCH, seq, HEADS, HEAD_DIM).transpose(1, 2)
    # v as a view of a fused q / k / v projection's output (what inductor's freezing makes)
    v_fused = t(BATCH, seq, 3, HEADS, HEAD_DIM)[:, :, 2].transpose(1, 2)
    kt = t(BATCH, TEXT, HEADS, HEAD_DIM).transpose(1, 2)
    vt = t(BATCH, TEXT, HEADS, HEAD_DIM).transpose(1, 2)
    mask = torch.zeros(BATCH, HEADS, 1, TEXT, device=dev, dtype=dtype)
    mask[:, :, :, TEXT - 16:] = -10000.0

    def sdpa(backend, qq, kk, vv, m=None):
        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qq, kk, vv, attn_mask=m)
        return run

    out = {
        "linear qkv 5376x2048->6144": lambda: F.linear(x, w_qkv, b_qkv),
        "linear proj 5376x2048->2048": lambda: F.linear(x, w_proj, b_proj),
        "linear ff up 5376x2048->8192": lambda: F.linear(x, w_up, b_up),
        "addmm gelu ff up (ours)": lambda: torch._addmm_activation(b_up, x, w_up.t(),
                                                                   use_gelu=True),
        "linear ff down 5376x8192->2048": lambda: F.linear(h, w_down, b_down),
        "linear text kv 256x2048->4096": lambda: F.linear(text, w_kv, b_kv),
        "mm (no bias) 5376x2048->2048": lambda: torch.mm(x, w_proj.t()),
    }
    # LLaMA-8B at 4096 tokens: no biases (mm through cuBLAS)
    lx = t(4096, 4096)
    lw = {n: t(c, 4096) for n, c in (("q", 4096), ("kv", 1024), ("qkv", 6144), ("gate", 14336),
                                     ("gate_up", 28672))}
    out.update({
        "llama q 4096x4096->4096": lambda: F.linear(lx, lw["q"]),
        "llama k (or v) 4096x4096->1024": lambda: F.linear(lx, lw["kv"]),
        "llama qkv fused 4096x4096->6144": lambda: F.linear(lx, lw["qkv"]),
        "llama gate (or up) 4096x4096->14336": lambda: F.linear(lx, lw["gate"]),
        "llama gate_up fused 4096x4096->28672": lambda: F.linear(lx, lw["gate_up"]),
    })
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("flash", SDPBackend.FLASH_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        out[f"sdpa self {name}"] = sdpa(backend, q, k, v)
        out[f"sdpa self {name}, v strided"] = sdpa(backend, q, k, v_fused)
        if name != "flash":  # no additive masks there
            out[f"sdpa cross {name}, mask"] = sdpa(backend, q, kt, vt, mask)
    return out


def device_events(fn: Callable[[], torch.Tensor]) -> List[str]:
    """Names of the kernels and memsets / copies one call puts on the GPU, in order."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            names.append(e.name)
    return names


def graph_time_us(fn: Callable[[], torch.Tensor], calls: int, replays: int) -> float:
    """Median time a call in a CUDA graph of `calls` calls."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / calls)
    return statistics.median(times)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tag", default="default", help="names this environment in the output")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--replays", type=int, default=7)
    ap.add_argument("--only", default="", help="substring: only the cases whose name has it")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to probe", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if k.startswith(("CUBLAS", "TORCH_CUDNN"))}
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} "
          f"cuBLAS {torch.backends.cuda.preferred_blas_library()} "
          f"cuDNN {torch.backends.cudnn.version()} [{args.tag}] env {env}", flush=True)
    print("| case | us a call | memsets a call | kernels a call |")
    print("| --- | --- | --- | --- |")
    rows = []
    for name, fn in cases(torch.bfloat16).items():
        if args.only and args.only not in name:
            continue
        try:
            fn()
            torch.cuda.synchronize()
        except RuntimeError as e:  # a backend that does not take this case
            print(f"| {name} | - | - | not run: {str(e).splitlines()[0][:90]} |", flush=True)
            continue
        events = device_events(fn)
        memsets = sum("memset" in n.lower() for n in events)
        kernels = [n for n in events if "memset" not in n.lower()]
        us = graph_time_us(fn, args.calls, args.replays)
        short = "; ".join(n[:70] for n in kernels)
        print(f"| {name} | {us:.1f} | {memsets} | {short} |", flush=True)
        rows.append({"tag": args.tag, "case": name, "us": us, "memsets": memsets,
                     "kernels": kernels})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
