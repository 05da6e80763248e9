#!/usr/bin/env python3
"""Rebuilds the markdown table and the plot from one or more sweep CSVs (benchmarks/sweep.py),
e.g. to combine a full run with a later re-run of some ops on the same GPU. For each
(op, shape, dtype), the rows of the last CSV that has it win.

    python benchmarks/report.py run1/sweep.csv run2/sweep.csv --out benchmarks/results/h200
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import TABLE, write_outputs  # noqa: E402


def table_order(keys: list[tuple]):
    """Sort key for (op, shape, dtype) cases: dtype, then the op and shape order of sweep's
    TABLE (a case merged in from a later CSV lands among its op's shapes, not at the end);
    cases TABLE does not list keep their order after those it does."""
    ops = list(TABLE)
    first = {k: i for i, k in enumerate(keys)}

    def key(k):
        op, shape, dtype = k
        shapes = ["x".join(map(str, s)) for s in TABLE[op][1]] if op in TABLE else []
        known = op in TABLE and shape in shapes
        return (dtype, not known, ops.index(op) if known else 0,
                shapes.index(shape) if known else 0, first[k])
    return key


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csvs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--meta", type=Path, default=None,
                    help="sweep-meta.json to use (default: the one beside the last CSV)")
    ap.add_argument("--note", default=None,
                    help="a line for the table's header, e.g. which run measured which ops")
    args = ap.parse_args(argv)
    groups: dict[tuple, list[dict]] = {}
    for path in args.csvs:
        with open(path) as f:
            rows = list(csv.DictReader(f))
        mine: dict[tuple, list[dict]] = {}
        for r in rows:
            for k in ("us", "GBps", "copy_share", "MB"):
                r[k] = float(r[k])
            r["vs_best_peer"] = float(r["vs_best_peer"]) if r["vs_best_peer"] else ""
            for k in ("vs_unfused", "bytes_ratio"):  # fused ops' ours rows (newer CSVs)
                r[k] = float(r[k]) if r.get(k) else ""
            mine.setdefault((r["op"], r["shape"], r["dtype"]), []).append(r)
        groups.update(mine)
    meta_path = args.meta or args.csvs[-1].parent / "sweep-meta.json"
    meta = json.loads(meta_path.read_text())
    if args.note:
        meta["note"] = args.note
    write_outputs([r for key in sorted(groups, key=table_order(list(groups)))
                   for r in groups[key]], args.out, meta)
    print((args.out / "sweep.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
