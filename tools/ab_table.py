#!/usr/bin/env python3
"""Our kernels' times from two sides of an A/B side by side:

    ab_table.py A/sweep.csv B/sweep.csv
    ab_table.py A1/sweep.csv A2/sweep.csv -- B1/sweep.csv B2/sweep.csv

prints a markdown table of every case in both sides (op, shape, dtype): each side's times (the
mean of its runs, each run's time listed when a side has several) and B / A of the means. With
several runs a side, run them interleaved (A B A B) on one lease, so that drift shows as spread
within a side instead of a difference between them."""

import csv
import statistics
import sys


def times(path):
    with open(path) as f:
        return {(r["op"], r["shape"], r["dtype"]): float(r["us"]) for r in csv.DictReader(f)
                if r["impl"] == "ltx"}


def sides(argv):
    if "--" in argv:
        i = argv.index("--")
        a, b = argv[:i], argv[i + 1:]
    elif len(argv) == 2:
        a, b = argv[:1], argv[1:]
    else:
        a = b = []
    if not a or not b:
        raise SystemExit(__doc__)
    return [times(p) for p in a], [times(p) for p in b]


def cell(runs):
    m = statistics.fmean(runs)
    return f"{m:.1f}" if len(runs) == 1 else f"{m:.1f} ({' '.join(f'{x:.1f}' for x in runs)})"


def main(argv):
    a, b = sides(argv)
    print("| op | shape | dtype | A us | B us | B / A |\n|---|---|---|---|---|---|")
    for k in a[0]:
        ra, rb = [t[k] for t in a if k in t], [t[k] for t in b if k in t]
        if len(ra) == len(a) and len(rb) == len(b):
            ratio = statistics.fmean(rb) / statistics.fmean(ra)
            print(f"| {' | '.join(k)} | {cell(ra)} | {cell(rb)} | {ratio:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
