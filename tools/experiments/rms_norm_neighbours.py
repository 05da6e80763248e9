#!/usr/bin/env python3
"""RMSNorm's implementations timed as the sweep times them, in an order given here (run BB,
call 5): does an implementation's time depend on which one was timed just before or after it?

Run BB's calls 3 and 4 found Liger's RMSNorm 9-10% faster in every sweep process that also timed
torch.compile's kernel, and ours 3% faster only where ours sat next to compile's in the order
(benchmarks/sweep.py times a case's implementations in the table's order, Liger always right
after compile, then in reverse). With `--order liger,ltx,compile` Liger is never next to
compile's kernel (round 1: liger, ltx, compile; round 2 the reverse), though compile runs in the
process; with `--order ltx,compile,liger` it is, as in the table.

    python tools/experiments/rms_norm_neighbours.py --order liger,ltx,compile [--shapes ...]

Needs a CUDA device, this package's build and, for `liger`, liger_kernel.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sweep  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--order", required=True,
                    help="comma-separated implementations of sweep's rms_norm case, in the order "
                         "of the first round (the next round reverses it)")
    ap.add_argument("--shapes", default="2x2688x2048,1x4096x4096")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA device", file=sys.stderr)
        return 1
    order = args.order.split(",")
    k = sweep.load_kernel()
    lf = sweep.try_liger() if "liger" in order else None
    for spec in args.shapes.split(","):
        shape = tuple(int(s) for s in spec.split("x"))
        case = sweep.rms_norm_case(k, lf, shape, "bf16")
        unknown = [n for n in order if n not in case.impls]
        if unknown:
            print(f"unknown implementations {unknown}; the case has {list(case.impls)}",
                  file=sys.stderr)
            return 2
        t = sweep.time_impls({n: case.impls[n] for n in order}, spec, graph=True,
                             rounds=args.rounds, order="alternate")
        print(f"order {args.order} | {spec} | " +
              " | ".join(f"{n} {t[n]:.2f}" for n in order), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
