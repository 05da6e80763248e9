#!/usr/bin/env python3
"""Issue 4's targets counted over full sweep tables (benchmarks/sweep.py CSVs):

    python tools/targets.py benchmarks/results/h200/full-bf16/sweep.csv [more.csv ...]

For each CSV, over our rows (impl "ltx"): level with or ahead of the best peer (best peer time
/ ours >= 0.995: 1.00x at two decimals); at least 90% of the copy where the op moves 64 MB or
more; at least 1.3x the best peer where it moves 16 MB or less (the small, launch-bound
shapes); fused ops at least their bytes ratio against the unfused sequence of fastest steps."""

import csv
import sys

LEVEL = 0.995  # best peer time / ours at or above it: level (1.00x at two decimals) or ahead


def count(path):
    with open(path) as f:
        ours = [r for r in csv.DictReader(f) if r["impl"] == "ltx"]

    def share(rows, ok):
        return f"{sum(1 for r in rows if ok(r))} of {len(rows)}"

    big = [r for r in ours if float(r["MB"]) >= 64]
    small = [r for r in ours if float(r["MB"]) <= 16 and r["vs_best_peer"]]
    fused = [r for r in ours if r.get("vs_unfused")]
    return {
        "level or ahead of the best peer": share(
            ours, lambda r: r["vs_best_peer"] != "" and float(r["vs_best_peer"]) >= LEVEL),
        ">= 90% of the copy from 64 MB": share(big, lambda r: float(r["copy_share"]) >= 0.9),
        ">= 1.3x the best peer to 16 MB": share(small,
                                                lambda r: float(r["vs_best_peer"]) >= 1.3),
        "fused: >= the bytes ratio": share(
            fused, lambda r: float(r["vs_unfused"]) >= float(r["bytes_ratio"])),
    }


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    if not argv:
        raise SystemExit(__doc__)
    for path in argv:
        print(path)
        for k, v in count(path).items():
            print(f"  {k}: {v}")


if __name__ == "__main__":
    main(sys.argv[1:])
