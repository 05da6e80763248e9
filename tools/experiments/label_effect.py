#!/usr/bin/env python3
"""Is a sweep case's time a property of its work, or of its label? (PERFORMANCE.md, run VV.)

The sweep's rms_norm cases 4x1024x2048 and 1x4096x2048 are the same work (4096 rows of 2048),
yet on the H100 the peers' times swap between them (runs NN, UU, bf16: Liger 17.7 / 14.5 us,
F.rms_norm 15.8 / 18.9) while ours and torch.compile's stay within 0.3 us. The two labels
differ in the rounds' orders (benchmarks/sweep.py's `round_order` seeds its shuffle with the
label) and in where the case's tensors were allocated. This script times the same work with
the sweep's own `bench` (CUDA graphs, the L2 flushed before each repetition) in four parts:

  replay  the sweep's procedure for each label: one build, its rounds in the label's orders,
          the median of the rounds; each label twice (does the swap come back in this process?)
  orders  one build of the first shape, `--trials` seeded random orders: each implementation's
          time by the one timed before it (the neighbour effect: runs U, CC)
  allocs  the table's order, `--trials` builds, each after a pad of a seeded size (0-62 MiB in
          2 MiB steps, held while it is timed; the allocator's cache emptied between builds),
          so that the tensors land elsewhere each time: each implementation's spread
  labels  both shapes, the table's order, no pad, alternating: the shape alone

and writes OUT/label_effect.csv (every timing, with its predecessor and the captured output's
address) and OUT/label_effect.md (the tables, and ours against each peer over every build).

    python tools/experiments/label_effect.py --out /tmp/label           # a GPU, ~1-2 minutes
    python tools/experiments/label_effect.py --device cpu --impls ltx,eager,F.rms_norm \\
        --shapes 1x64x256,4x16x256 --trials 2 --out /tmp/label          # the plumbing, on a CPU
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import sweep  # noqa: E402

PARTS = ("replay", "orders", "allocs", "labels")
PAD_STEP_MIB, PAD_STEPS = 2, 32  # pads of 0, 2, ..., 62 MiB


def cpu_bench(fn: Callable[[], object], graph: bool = True) -> float:
    """The median of 5 wall-clock calls after 2, in us: the plumbing's stand-in for
    sweep.bench on a machine without a GPU (no graph, no flush)."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(v) for v in text.split("x"))
    except ValueError:
        shape = ()
    if len(shape) < 2 or min(shape) < 1:
        raise ValueError(f"shape {text!r}: want dims like 1x4096x2048")
    return shape


def same_work(shapes: list[tuple[int, ...]]) -> bool:
    """Whether every shape is the same rows of the same D (only the leading dims' split
    differs)."""
    return len({(math.prod(s[:-1]), s[-1]) for s in shapes}) == 1


class Experiment:
    """The timings of one process: `run_round` times a build's implementations in one order
    and records each one's predecessor (the implementation timed right before it in this
    process, whatever the part) and the address of the output captured in its graph."""

    def __init__(self, k, lf, dtype: str, impls: list[str] | None, bench: Callable):
        self.k, self.lf, self.dtype, self.wanted, self.bench = k, lf, dtype, impls, bench
        self.rows: list[dict] = []
        self.last = "-"
        self.rounds = 0

    def build(self, shape: tuple[int, ...], pad_mib: int = 0):
        """A fresh case of `shape` (sweep.rms_norm_case) allocated after a pad of `pad_mib`
        MiB; returns (case, pad): keep the pad alive while the case is timed."""
        if sweep.DEVICE == "cuda":
            torch.cuda.empty_cache()
        pad = (torch.empty(pad_mib << 20, dtype=torch.uint8, device=sweep.DEVICE)
               if pad_mib else None)
        case = sweep.rms_norm_case(self.k, self.lf, shape, self.dtype)
        impls = {n: f for n, f in case.impls.items() if self.wanted is None or n in self.wanted}
        if not impls:
            raise SystemExit(f"none of --impls {self.wanted} is among {list(case.impls)}")
        case.impls = impls
        return case, pad

    def run_round(self, part: str, trial: int, case, pad_mib: int, order: list[str]) -> None:
        self.rounds += 1
        for pos, name in enumerate(order):
            ptrs: list[int] = []

            def call(fn=case.impls[name]):
                out = fn()
                ptrs.append(out.data_ptr())  # the last call is the graph's captured one
                return out

            try:
                us = self.bench(call, graph=True)
            except Exception as e:  # one implementation failing leaves the others' timings
                print(f"# {part} {case.shape} {name} failed: {type(e).__name__}: {e}",
                      file=sys.stderr)
                continue
            self.rows.append(dict(part=part, round=self.rounds, trial=trial, shape=case.shape,
                                  pad_mib=pad_mib,
                                  position=pos, before=self.last, impl=name, us=us,
                                  out_ptr=hex(ptrs[-1]) if ptrs else ""))
            self.last = name


def run(exp: Experiment, shapes: list[tuple[int, ...]], parts: list[str], trials: int,
        sweep_rounds: int, seed: int, progress: Callable[[str], None] = print) -> None:
    rng = random.Random(seed)
    first = shapes[0]
    if "replay" in parts:
        for rep in range(2):
            for shape in shapes:
                case, pad = exp.build(shape)
                label = f"{case.op} {case.shape} {exp.dtype}"
                for r in range(sweep_rounds):
                    exp.run_round("replay", rep, case,
                                  0, sweep.round_order(list(case.impls), label, r, "shuffle"))
                progress(f"replay {rep + 1}/2 {case.shape}")
                del case, pad
    if "orders" in parts:
        case, pad = exp.build(first)
        for t in range(trials):
            order = list(case.impls)
            rng.shuffle(order)
            exp.run_round("orders", t, case, 0, order)
        progress(f"orders: {trials} orders of {case.shape}")
        del case, pad
    if "allocs" in parts:
        for t in range(trials):
            pad_mib = PAD_STEP_MIB * rng.randrange(PAD_STEPS)
            case, pad = exp.build(first, pad_mib)
            exp.run_round("allocs", t, case, pad_mib, list(case.impls))
            del case, pad
        progress(f"allocs: {trials} builds")
    if "labels" in parts:
        for t in range(max(2, trials // 2)):
            for shape in shapes:
                case, pad = exp.build(shape)
                exp.run_round("labels", t, case, 0, list(case.impls))
                del case, pad
        progress("labels: done")


def fmt(v: float) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:.2f}"


def med(vals: list[float]) -> float:
    return statistics.median(vals) if vals else math.nan


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(r) + " |" for r in rows])


def summarize(rows: list[dict], impls: list[str]) -> str:
    """The markdown report of `rows` (Experiment.rows)."""
    out: list[str] = []
    by = lambda **kw: [r for r in rows if all(r[k] == v for k, v in kw.items())]  # noqa: E731
    if by(part="replay"):
        out += ["## replay: the sweep's procedure per label (us: each round, then the median)", ""]
        body = []
        for rep in sorted({r["trial"] for r in by(part="replay")}):
            for shape in dict.fromkeys(r["shape"] for r in by(part="replay")):
                cells = []
                for name in impls:
                    ts = [r["us"] for r in by(part="replay", trial=rep, shape=shape, impl=name)]
                    cells.append(" / ".join(fmt(t) for t in ts) + f" -> **{fmt(med(ts))}**")
                body.append([str(rep + 1), shape] + cells)
        out += table(["rep", "label"] + impls, body) + [""]
    if by(part="orders"):
        out += ["## orders: one build, each implementation's median by the one timed before it",
                "", "(rows: the implementation timed; columns: its predecessor; n in brackets)",
                ""]
        befores = sorted({r["before"] for r in by(part="orders")})
        body = []
        for name in impls:
            cells = []
            for b in befores:
                ts = [r["us"] for r in by(part="orders", impl=name, before=b)]
                cells.append(f"{fmt(med(ts))} ({len(ts)})" if ts else "")
            body.append([name] + cells)
        out += table(["impl"] + befores, body) + [""]
    if by(part="allocs"):
        out += ["## allocs: the table's order, a new build after each pad (us)", ""]
        body = []
        for t in sorted({r["trial"] for r in by(part="allocs")}):
            rs = by(part="allocs", trial=t)
            cells = [fmt(next((r["us"] for r in rs if r["impl"] == n), math.nan))
                     for n in impls]
            body.append([str(t), str(rs[0]["pad_mib"])] + cells)
        spread = []
        for n in impls:
            ts = [r["us"] for r in by(part="allocs", impl=n)]
            spread.append(f"{fmt(min(ts))}-{fmt(max(ts))}" if ts else "-")
        out += table(["build", "pad MiB"] + impls, body + [["range", ""] + spread]) + [""]
    if by(part="labels"):
        out += ["## labels: both shapes, the table's order, no pad (median us)", ""]
        body = []
        for shape in dict.fromkeys(r["shape"] for r in by(part="labels")):
            body.append([shape] + [fmt(med([r["us"] for r in by(part="labels", shape=shape,
                                                                   impl=n)])) for n in impls])
        out += table(["shape"] + impls, body) + [""]
    # Ours against each peer over every build: the per-round ratio (the same build, the same
    # round), then its median, min and max; and each implementation's median over everything.
    out += ["## every timing", ""]
    body = [[n, fmt(med([r["us"] for r in rows if r["impl"] == n])),
             str(sum(r["impl"] == n for r in rows))] for n in impls]
    out += table(["impl", "median us", "n"], body) + [""]
    if "ltx" in impls:
        rounds: dict[int, dict[str, float]] = {}
        for r in rows:
            rounds.setdefault(r["round"], {})[r["impl"]] = r["us"]
        body = []
        for n in impls:
            if n == "ltx":
                continue
            ratios = [d[n] / d["ltx"] for d in rounds.values() if n in d and "ltx" in d]
            if ratios:
                body.append([n, fmt(med(ratios)), fmt(min(ratios)), fmt(max(ratios)),
                             str(len(ratios))])
        out += ["Ours against each peer, round by round (peer's time / ours: above 1, ours "
                "faster):", ""]
        out += table(["peer", "median", "min", "max", "rounds"], body) + [""]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="1x4096x2048,4x1024x2048",
                    help="comma-separated shapes of the same work (same rows, same D)")
    ap.add_argument("--dtype", default="bf16", choices=sorted(sweep.DTYPES))
    ap.add_argument("--impls", default=None, help="comma-separated (default: every one the "
                    "sweep's rms_norm case has: ltx, eager, F.rms_norm, compile, liger)")
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--trials", type=int, default=10, help="orders / builds a part")
    ap.add_argument("--rounds", type=int, default=3, help="the replayed sweep's rounds")
    ap.add_argument("--flush", choices=["zero", "read"], default="zero")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cpu: the plumbing only (wall-clock times, no graphs, no flush)")
    ap.add_argument("--out", type=Path, default=Path("label-effect"))
    args = ap.parse_args(argv)
    try:
        shapes = [parse_shape(s) for s in args.shapes.split(",") if s]
    except ValueError as e:
        ap.error(str(e))
    if not same_work(shapes):
        ap.error(f"--shapes {args.shapes}: not the same rows of the same D")
    parts = [p for p in args.parts.split(",") if p]
    if not parts or any(p not in PARTS for p in parts):
        ap.error(f"--parts: from {PARTS}")
    if args.trials < 1 or args.rounds < 1:
        ap.error("--trials and --rounds must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("label_effect.py needs a CUDA GPU (--device cpu runs the plumbing)",
              file=sys.stderr)
        return 2
    sweep.DEVICE = args.device
    sweep.FLUSH = args.flush
    k = sweep.load_kernel()
    lf = sweep.try_liger() if args.device == "cuda" else None
    impls = args.impls.split(",") if args.impls else None
    exp = Experiment(k, lf, args.dtype, impls,
                     sweep.bench if args.device == "cuda" else cpu_bench)
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"# {gpu} torch {torch.__version__}, rms_norm {args.dtype}, shapes {args.shapes}, "
          f"flush {args.flush}", flush=True)
    t0 = time.time()
    run(exp, shapes, parts, args.trials, args.rounds, args.seed,
        progress=lambda m: print(f"[{time.time() - t0:5.1f} s] {m}", flush=True))
    if not exp.rows:
        print("every implementation failed: nothing timed", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "label_effect.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(exp.rows[0]))
        w.writeheader()
        w.writerows(exp.rows)
    seen = list(dict.fromkeys(r["impl"] for r in exp.rows))
    names = [n for n in sweep.IMPL_ORDER if n in seen] + [n for n in seen
                                                          if n not in sweep.IMPL_ORDER]
    report = (f"# Label effect: rms_norm {args.dtype}, {args.shapes} on {gpu}, torch "
              f"{torch.__version__}, flush {args.flush}, seed {args.seed}\n\n"
              + summarize(exp.rows, names))
    (args.out / "label_effect.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
