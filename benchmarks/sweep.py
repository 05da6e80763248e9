#!/usr/bin/env python3
"""Bandwidth sweep: every op against its peers, on one GPU, in one run.

For each (op, shape, dtype) it times ours and each peer that applies (eager PyTorch, F.rms_norm /
F.layer_norm, torch.compile of the eager math, Liger-Kernel) with CUDA events, the L2 flushed
before every repetition, and takes the median (triton.testing.do_bench). GB/s comes from an
explicit byte model (each input read once, each output written once); the share of a device
copy is against a device-to-device copy measured in the same run.

    python benchmarks/sweep.py --quick            # a two-minute subset
    python benchmarks/sweep.py --ops rms_norm --dtypes bf16 --out bench-results

Writes <out>/sweep.csv, <out>/sweep.md and <out>/sweep.png (GB/s against bytes moved, one line per
implementation).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def load_kernel():
    from kernels import get_kernel

    with open(ROOT / "build.toml", "rb") as f:
        repo_id = tomllib.load(f)["general"]["hub"]["repo-id"]
    os.environ.setdefault("LOCAL_KERNELS", f"{repo_id}={ROOT}")
    return get_kernel(repo_id, version=1)


def bench(fn: Callable[[], object], graph: bool = True) -> float:
    """Median GPU time in microseconds, the L2 flushed before each repetition
    (triton.testing.do_bench zeroes a 256 MB buffer between repetitions).

    With `graph`, the call is captured once in a CUDA graph and its replays are timed, so that
    every implementation is measured by the GPU time of its kernels, without the CPU cost of
    launching them (Python wrappers, guards, Triton launchers differ a lot there)."""
    from triton.testing import do_bench

    run = fn
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up: compile, autotune, allocate before capture
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run = g.replay
    return do_bench(run, warmup=25, rep=200, return_mode="median") * 1e3


def copy_bandwidth() -> float:
    """GB/s of a 1 GiB device-to-device copy, counting bytes read plus bytes written."""
    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    src.random_()
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src), graph=False)
    return 2 * src.numel() / (t * 1e-6) / 1e9


def try_liger():
    try:
        import liger_kernel.transformers.functional as lf  # noqa: F401

        return lf
    except Exception as e:  # not installed, or no Triton backend
        print(f"# Liger-Kernel unavailable: {e}", file=sys.stderr)
        return None


# ---- the cases --------------------------------------------------------------------------------


@dataclass
class Case:
    op: str
    shape: str
    dtype: str
    nbytes: int
    impls: dict[str, Callable[[], object]]
    check: tuple[str, Callable[[], torch.Tensor]] | None = None  # (impl, reference) for sanity


_compiled: dict[str, Callable] = {}


def compiled(name: str, fn: Callable) -> Callable:
    if name not in _compiled:
        _compiled[name] = torch.compile(fn, dynamic=False)
    return _compiled[name]


def eager_llama_rms_norm(x, w, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def rms_norm_case(k, lf, shape, dtype_name) -> Case:
    dtype = DTYPES[dtype_name]
    *lead, D = shape
    x = torch.randn(shape, dtype=dtype, device="cuda")
    w = (1 + 0.1 * torch.randn(D, device="cuda")).to(dtype)
    eps = 1e-6
    nbytes = 2 * x.numel() * x.element_size() + w.numel() * w.element_size()
    impls = {
        "ltx": lambda: k.rms_norm(x, w, eps, round_before_weight=True),
        "eager": lambda: eager_llama_rms_norm(x, w, eps),
        "F.rms_norm": lambda: F.rms_norm(x, (D,), w, eps),
        "compile": lambda: compiled(f"rms{shape}{dtype_name}", eager_llama_rms_norm)(x, w, eps),
    }
    if lf is not None:
        x2 = x.view(-1, D)
        impls["liger"] = lambda: lf.liger_rms_norm(x2, w, eps, 0.0, "llama", False)
    return Case("rms_norm", "x".join(map(str, shape)), dtype_name, nbytes, impls,
                check=("ltx", lambda: eager_llama_rms_norm(x, w, eps)))


# (op, shapes, quick shapes)
SEED_SHAPES = [(1, 1024, 2048), (2, 1024, 2048), (4, 1024, 2048), (2, 4096, 3072),
               (4, 4096, 3072), (8, 8192, 4096)]
TABLE: dict[str, tuple[Callable, list, list]] = {
    "rms_norm": (rms_norm_case, SEED_SHAPES + [(1, 1, 4096), (1, 16384, 8192), (2, 2688, 2048)],
                 SEED_SHAPES),
}


# ---- output -----------------------------------------------------------------------------------


def write_outputs(rows: list[dict], out: Path, meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    fields = ["op", "shape", "dtype", "impl", "us", "GBps", "copy_share", "MB", "vs_best_peer"]
    with open(out / "sweep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})
    impls = [i for i in dict.fromkeys(r["impl"] for r in rows)]
    lines = [f"GPU: {meta['gpu']}; torch {meta['torch']}; {meta['date']}; copy "
             f"{meta['copy_GBps']:.0f} GB/s. Time in us (median of CUDA-graph replays, "
             f"L2 flushed{', no graphs' if meta.get('no_graph') else ''}), "
             "share of the copy bandwidth in brackets; last column: best peer time / ours.", "",
             "| op | shape | dtype | MB | " + " | ".join(impls) + " | speedup |",
             "|" + "---|" * (len(impls) + 5)]
    keys = list(dict.fromkeys((r["op"], r["shape"], r["dtype"]) for r in rows))
    for key in keys:
        rs = {r["impl"]: r for r in rows if (r["op"], r["shape"], r["dtype"]) == key}
        cells = []
        for i in impls:
            r = rs.get(i)
            cells.append(f"{r['us']:.1f} ({100 * r['copy_share']:.0f}%)" if r else "-")
        mb = next(iter(rs.values()))["MB"]
        sp = rs.get("ltx", {}).get("vs_best_peer", "")
        sp_s = f"{sp:.2f}x" if sp != "" else "-"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {mb:.1f} | " + " | ".join(cells)
                     + f" | {sp_s} |")
    (out / "sweep.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ops = list(dict.fromkeys(r["op"] for r in rows))
        fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4.5), squeeze=False)
        for ax, op in zip(axes[0], ops):
            for impl in impls:
                pts = sorted((r["MB"], r["GBps"]) for r in rows
                             if r["op"] == op and r["impl"] == impl and r["dtype"] == "bf16")
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
            ax.axhline(meta["copy_GBps"], color="gray", ls="--", label="device copy")
            ax.set_xscale("log")
            ax.set_xlabel("MB moved")
            ax.set_ylabel("GB/s")
            ax.set_title(f"{op} (bf16)")
            ax.legend(fontsize=8)
        fig.suptitle(f"{meta['gpu']}, torch {meta['torch']}, {meta['date']}")
        fig.tight_layout()
        fig.savefig(out / "sweep.png", dpi=120)
    except Exception as e:
        print(f"# no plot: {e}", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ops", default=",".join(TABLE), help="comma-separated ops")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--quick", action="store_true", help="seed shapes only, bf16 only")
    ap.add_argument("--out", default="bench-results")
    ap.add_argument("--impls", default=None,
                    help="comma-separated implementations to time (default: all)")
    ap.add_argument("--no-graph", action="store_true",
                    help="time direct calls (CPU launch cost included) instead of graph replays")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("sweep.py needs a CUDA GPU", file=sys.stderr)
        return 2

    # One compiled function per (op, shape, dtype): lift dynamo's recompile limits.
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 4096)
    k = load_kernel()
    lf = try_liger()
    copy_gbps = copy_bandwidth()
    meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                date=datetime.date.today().isoformat(), copy_GBps=copy_gbps,
                no_graph=args.no_graph)
    print(f"# {meta['gpu']} torch {meta['torch']} copy {copy_gbps:.0f} GB/s", flush=True)
    dtypes = ["bf16"] if args.quick else args.dtypes.split(",")
    rows: list[dict] = []
    ops = [o for o in args.ops.split(",") if o]
    todo = [(op, shape, dt) for op in ops for dt in dtypes
            for shape in (TABLE[op][2] if args.quick else TABLE[op][1])]
    for n, (op, shape, dt) in enumerate(todo, 1):
        case = TABLE[op][0](k, lf, shape, dt)
        if case.check is not None:
            ours, ref = case.check
            got, want = case.impls[ours](), ref()
            got = got[0] if isinstance(got, tuple) else got
            want = want[0] if isinstance(want, tuple) else want
            err = ((got.double() - want.double()).norm() / want.double().norm()).item()
            if not err < 2e-2:
                raise SystemExit(f"{op} {case.shape} {dt}: relative error {err:.3g} vs reference")
        times = {}
        for name, fn in case.impls.items():
            if args.impls and name not in args.impls.split(","):
                continue
            try:
                times[name] = bench(fn, graph=not args.no_graph)
            except Exception as e:
                print(f"# {op} {case.shape} {dt} {name} failed: {type(e).__name__}: {e}",
                      file=sys.stderr)
        peers = [t for name, t in times.items() if name != "ltx"]
        best_peer = min(peers) if peers else math.nan
        for name, t in times.items():
            gbps = case.nbytes / (t * 1e-6) / 1e9
            rows.append(dict(op=op, shape=case.shape, dtype=dt, impl=name, us=t, GBps=gbps,
                             copy_share=gbps / copy_gbps, MB=case.nbytes / 1e6,
                             vs_best_peer=(best_peer / t) if name == "ltx" else ""))
        line = " ".join(f"{name}={t:.1f}" for name, t in times.items())
        print(f"[{n}/{len(todo)}] {op} {case.shape} {dt} ({case.nbytes / 1e6:.1f} MB): {line} us"
              f" -> ltx {case.nbytes / (times.get('ltx', math.nan) * 1e-6) / 1e9:.0f} GB/s",
              flush=True)
        del case
        torch.cuda.empty_cache()
    write_outputs(rows, Path(args.out), meta)
    print((Path(args.out) / "sweep.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
