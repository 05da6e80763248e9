#!/usr/bin/env python3
"""RMSNorm, ours against Liger, writing to the same output memory at several addresses (run BB,
call 2): does where the output lies decide the table's gap?

Run BB's call 1 timed ours against Liger in sweeps of the two alone: ours level or ahead at
2x2688x2048 (17.3 against 17.7 us), where the table's sweep of every peer has Liger at 15.8-16.0
and ours at 17.3-17.5 (run Z). Liger's time moves with the sweep's set of implementations,
ours does not (run U saw the same). Each implementation writes its output into memory its own
CUDA graph allocated; after the zeroing flush the L2 is full of dirty lines, and which DRAM
channels and banks the output's lines (and their victims' write-backs) meet depends on the
output's address. Here both kernels write into views of one buffer at the same offsets (ours
through `out=`, Liger's forward kernel launched directly with that view as Y), x and the weight
fixed, each timed as the sweep times it (`sweep.bench`: CUDA graph replays, the L2 flushed by
zeroing, or `--flush read`), the two in alternating order at each offset.

    python tools/experiments/rms_norm_out_address.py [--shapes 2x2688x2048,...] [--flush read]

Needs a CUDA device, this package's build and liger_kernel (Triton).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sweep  # noqa: E402

OFFSETS_KIB = (0, 4, 64, 512, 1024, 2048, 3072, 4096, 6144, 8192, 16384, 24576)


def liger_forward(x2, w, eps, y2, rstd):
    """Liger 0.8.5's RMSNorm forward kernel (llama casting) launched as its wrapper launches it
    for these row counts, but writing to y2."""
    from liger_kernel.ops.rms_norm import _CASTING_MODE_LLAMA, _rms_norm_forward_kernel
    from liger_kernel.ops.utils import calculate_settings

    n_rows, n_cols = x2.shape
    block, warps = calculate_settings(n_cols)
    mode = getattr(_CASTING_MODE_LLAMA, "value", _CASTING_MODE_LLAMA)
    _rms_norm_forward_kernel[(n_rows,)](
        y2, y2.stride(0), x2, x2.stride(0), w, w.stride(0), rstd, rstd.stride(0), n_cols, eps,
        0.0, mode, elementwise_affine=True, BLOCK_SIZE=block, num_warps=warps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="2x2688x2048,1x4096x4096,2x2688x4096")
    ap.add_argument("--flush", choices=["zero", "read"], default="zero")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA device", file=sys.stderr)
        return 1
    sweep.FLUSH = args.flush
    k = sweep.load_kernel()
    dt, eps = torch.bfloat16, 1e-6
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}, flush: {args.flush}, "
          f"{args.rounds} rounds alternating, us (median of rounds)")
    print("| shape | out offset KiB | out address mod 2 MiB (KiB) | ours | liger | liger / ours |")
    print("| --- | --- | --- | --- | --- | --- |")
    for spec in args.shapes.split(","):
        shape = tuple(int(s) for s in spec.split("x"))
        D = shape[-1]
        n = 1
        for s in shape:
            n *= s
        x = torch.randn(shape, dtype=dt, device="cuda")
        w = (1 + 0.1 * torch.randn(D, device="cuda")).to(dt)
        rstd = torch.empty(n // D, dtype=torch.float32, device="cuda")
        buf = torch.empty(n + max(OFFSETS_KIB) * 1024 // 2, dtype=dt, device="cuda")
        ref = sweep.eager_llama_rms_norm(x, w, eps)
        # the implementations as the table times them (their own outputs), for reference
        lf = sweep.try_liger()
        x2 = x.view(-1, D)
        base = sweep.time_impls({
            "ours": lambda: k.rms_norm(x, w, eps, round_before_weight=True),
            "liger": lambda: lf.liger_rms_norm(x2, w, eps, 0.0, "llama", False)},
            spec, graph=True, rounds=args.rounds, order="alternate")  # as run BB timed it
        print(f"| {spec} | own allocation | - | {base['ours']:.2f} | {base['liger']:.2f} | "
              f"{base['liger'] / base['ours']:.3f} |", flush=True)
        ratios = []
        for off_kib in OFFSETS_KIB:
            e0 = off_kib * 1024 // 2
            out = buf[e0:e0 + n].view(shape)
            y2 = out.view(-1, D)
            fns = {"ours": lambda: k.rms_norm(x, w, eps, out=out, round_before_weight=True),
                   "liger": lambda: liger_forward(x2, w, eps, y2, rstd)}
            for name, fn in fns.items():  # both write what the reference says
                out.zero_()
                fn()
                torch.testing.assert_close(out, ref, atol=2e-2, rtol=2e-2, msg=name)
            t = sweep.time_impls(fns, f"{spec}@{off_kib}", graph=True, rounds=args.rounds,
                                 order="alternate")
            ratios.append(t["liger"] / t["ours"])
            mod = (out.data_ptr() % (2 << 20)) // 1024
            print(f"| {spec} | {off_kib} | {mod} | {t['ours']:.2f} | {t['liger']:.2f} | "
                  f"{ratios[-1]:.3f} |", flush=True)
        print(f"| {spec} | over the offsets: liger / ours median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f} | | | | |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
