#!/usr/bin/env python3
"""Runs ours and torch.compile's kernels once each for a few sweep cases, inside an NVTX range
named "prof", so that Nsight Compute profiles exactly those launches:

    ncu --clock-control none --nvtx --nvtx-include "prof/" --set detailed -o out/ncu \\
        python tools/ncu_ops.py adaln:2x2688x2048 gelu_tanh:2x2688x8192

Each argument is op:shape (a case of benchmarks/sweep.py, bf16 unless op:shape:dtype). Every
implementation runs twice before the range (compilation and autotuning stay out of it).
NCU_IMPLS (default "ltx,compile") picks the implementations, e.g. "ltx,compile,liger" (a case
without one of them skips it).

NCU_FLUSH=zero or read: before each profiled launch (outside the range) the L2 is flushed as the
sweep's table does it (`sweep.flush_l2`: zeroing 256 MB leaves the L2 full of dirty lines,
reading it leaves clean ones). Profile then with `--cache-control none`, so that the kernel
meets the L2 that flush left instead of the one Nsight Compute's own flush leaves, and with
metrics that fit one pass (or `--replay-mode application`): a kernel replayed for a second pass
meets the L2 its first pass left.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import sweep  # noqa: E402

IMPLS = tuple(os.environ.get("NCU_IMPLS", "ltx,compile").split(","))
FLUSH = os.environ.get("NCU_FLUSH", "")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    if FLUSH not in ("", "zero", "read"):
        raise SystemExit(f"NCU_FLUSH={FLUSH!r}: expected zero or read")
    k = sweep.load_kernel()
    lf = sweep.try_liger() if "liger" in IMPLS else None
    cases = []
    for arg in argv:
        op, shape, *dt = arg.split(":")
        case = sweep.TABLE[op][0](k, lf, tuple(int(n) for n in shape.split("x")),
                                  dt[0] if dt else "bf16")
        for name in IMPLS:
            for _ in range(2 if name in case.impls else 0):
                case.impls[name]()
        cases.append(case)
    sweep.FLUSH = FLUSH or sweep.FLUSH
    torch.cuda.synchronize()
    for case in cases:
        for name in (n for n in IMPLS if n in case.impls):
            if FLUSH:
                sweep.flush_l2()
            torch.cuda.nvtx.range_push("prof")
            case.impls[name]()
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            print(f"{case.op} {case.shape} {case.dtype} {name}: profiled", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
