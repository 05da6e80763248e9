#!/usr/bin/env python3
"""The README's and the model card's performance tables, written from full sweep CSVs
(benchmarks/sweep.py) instead of by hand:

    python tools/summary_table.py benchmarks/results/h200/full-bf16/sweep.csv \
        benchmarks/results/h200/full-fp16/sweep.csv            # the README's table
    python tools/summary_table.py BF16.csv --card                # the card's (one dtype)
    python tools/summary_table.py BF16.csv --behind              # where ours trails

README table: for each row (--rows, default ROWS: each op's main shape and the smallest RMSNorm
cases), per CSV (one dtype each) ours in us with the share of the copy in brackets, the best
peer and its time, and the best peer's time over ours; ours in bold where it is level (1.00x at
two decimals, tools/targets.py's rule) or ahead. Card table: ours and each peer's time.
--behind: every case where ours trails the best peer, slowest first."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import best_peer as sweep_best_peer  # noqa: E402
from targets import LEVEL  # noqa: E402

ROWS = ["rms_norm:1x1x4096", "rms_norm:1x128x4096", "rms_norm:1x1024x2048",
        "rms_norm:2x1024x2048", "rms_norm:4x1024x2048", "rms_norm:2x2688x2048",
        "rms_norm:2x4096x3072", "rms_norm:4x4096x3072", "rms_norm:8x8192x4096",
        "fused_add_rms_norm:1x1x4096", "fused_add_rms_norm:1x16x4096",
        "fused_add_rms_norm:1x4096x2048", "fused_add_rms_norm:1x4096x4096",
        "adaln:2x2688x2048", "adaln:2x6144x2048", "adaln:4x4096x3072", "adaln:2x2688x4096",
        "adaln_per_token:2x2688x2048", "gated_residual_adaln:2x2688x2048",
        "gated_residual_adaln:2x2688x4096", "gated_residual_adaln:4x4096x3072",
        "gelu_tanh:2x2688x8192", "geglu:2x4096x16384", "silu_and_mul:1x4096x28672",
        "silu_mul:1x4096x14336", "rope_qk:1x32x4096x128", "rope_qk_gqa:1x4096x32x8x128",
        "gated_residual:2x2688x2048", "rms_norm_rope:2x2688x2048",
        "rms_norm_rope_qk:2x2688x2048", "rms_norm_rope_qk_shared:2x2688x2048",
        "rms_norm_rope_qk_pairs:2x2688x2048"]

CARD_ROWS = ["rms_norm:1x1024x2048", "rms_norm:8x8192x4096", "fused_add_rms_norm:1x4096x2048",
             "adaln:2x2688x2048", "adaln:2x6144x2048", "gated_residual_adaln:2x2688x2048",
             "gated_residual_adaln:4x4096x3072", "gelu_tanh:2x2688x8192",
             "geglu:2x4096x16384", "silu_and_mul:1x4096x28672", "silu_mul:1x4096x14336",
             "rope_qk:1x32x4096x128", "rope_qk_gqa:1x4096x32x8x128",
             "gated_residual:2x2688x2048", "rms_norm_rope:2x2688x2048",
             "rms_norm_rope_qk:2x2688x2048", "rms_norm_rope_qk_pairs:2x2688x2048"]
CARD_PEERS = ["eager", "compile", "liger"]
CARD_LABELS = {"rms_norm_rope_qk_pairs": "rms_norm_rope_qk, pair tables"}


def load(path: Path) -> dict[tuple[str, str], dict[str, dict]]:
    """(op, shape) -> impl -> row, for one CSV of one dtype."""
    cases: dict[tuple[str, str], dict[str, dict]] = {}
    dtypes = set()
    with open(path) as f:
        for r in csv.DictReader(f):
            dtypes.add(r["dtype"])
            cases.setdefault((r["op"], r["shape"]), {})[r["impl"]] = r
    if len(dtypes) != 1:
        raise SystemExit(f"{path}: one dtype a CSV, found {sorted(dtypes) or 'none'}")
    return cases


def dtype_of(cases) -> str:
    return next(iter(next(iter(cases.values())).values()))["dtype"]


def best_peer(impls: dict[str, dict]) -> tuple[str, float] | None:
    """sweep.py's best peer of a case's CSV rows."""
    return sweep_best_peer({name: float(r["us"]) for name, r in impls.items()})


def case(cases, key: str) -> dict[str, dict]:
    op, _, shape = key.partition(":")
    if (op, shape) not in cases:
        raise SystemExit(f"no case {key} in the CSV ({len(cases)} cases)")
    return cases[(op, shape)]


def ours_cell(r: dict, bold: bool) -> str:
    s = f"{float(r['us']):.1f} us ({100 * float(r['copy_share']):.0f}%)"
    return f"**{s}**" if bold else s


def readme_table(all_cases: list, rows: list[str]) -> list[str]:
    head = "| op | shape | MB | " + " | ".join(
        f"{dtype_of(c)}: ours | best peer | ours / best" for c in all_cases) + " |"
    lines = [head, "|" + " --- |" * (3 + 3 * len(all_cases))]
    for key in rows:
        op, _, shape = key.partition(":")
        cells = []
        mb = None
        for cases in all_cases:
            impls = case(cases, key)
            ours = impls["ltx"]
            mb = float(ours["MB"])
            bp = best_peer(impls)
            if bp is None:
                cells += [ours_cell(ours, False), "-", "-"]
                continue
            ratio = bp[1] / float(ours["us"])
            cells += [ours_cell(ours, ratio >= LEVEL), f"{bp[0]} {bp[1]:.1f}", f"{ratio:.2f}x"]
        lines.append(f"| {op} | {shape} | {mb:.1f} | " + " | ".join(cells) + " |")
    return lines


def card_table(cases, rows: list[str]) -> list[str]:
    lines = ["| op | shape | ours | " + " | ".join(
        {"compile": "torch.compile", "liger": "Liger"}.get(p, p) for p in CARD_PEERS) + " |",
        "|" + " --- |" * (3 + len(CARD_PEERS))]
    for key in rows:
        op, _, shape = key.partition(":")
        impls = case(cases, key)
        peers = [f"{float(impls[p]['us']):.1f}" if p in impls else "-" for p in CARD_PEERS]
        lines.append(f"| {CARD_LABELS.get(op, op)} | {shape} | {ours_cell(impls['ltx'], False)} | "
                     + " | ".join(peers) + " |")
    return lines


def behind(cases) -> list[str]:
    out = []
    for (op, shape), impls in cases.items():
        bp = best_peer(impls)
        if "ltx" not in impls or bp is None:
            continue
        ratio = bp[1] / float(impls["ltx"]["us"])
        if ratio < LEVEL:
            out.append((ratio, f"{op} {shape}: {ratio:.2f}x {bp[0]} "
                               f"({float(impls['ltx']['us']):.1f} against {bp[1]:.1f} us)"))
    return [f"{dtype_of(cases)}: {len(out)} of {len(cases)} cases behind the best peer"] + [
        s for _, s in sorted(out)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csvs", nargs="+", type=Path, help="one sweep CSV a dtype")
    ap.add_argument("--rows", help="comma-separated op:shape (default: the README's rows, "
                    "or the card's with --card)")
    ap.add_argument("--card", action="store_true", help="the card's table, of the first CSV")
    ap.add_argument("--behind", action="store_true", help="every case where ours trails")
    args = ap.parse_args(argv)
    all_cases = [load(p) for p in args.csvs]
    if args.behind:
        for cases in all_cases:
            print("\n".join(behind(cases)))
        return 0
    rows = args.rows.split(",") if args.rows else (CARD_ROWS if args.card else ROWS)
    lines = card_table(all_cases[0], rows) if args.card else readme_table(all_cases, rows)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
