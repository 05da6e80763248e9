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
from sweep import write_outputs  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csvs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--meta", type=Path, default=None,
                    help="sweep-meta.json to use (default: the one beside the last CSV)")
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
    write_outputs([r for g in groups.values() for r in g], args.out, meta)
    print((args.out / "sweep.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
