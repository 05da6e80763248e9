#!/usr/bin/env python3
"""Our kernels' times from two sweeps side by side: `ab_table.py A/sweep.csv B/sweep.csv`
prints a markdown table of every case in both (op, shape, dtype), A us, B us and B / A."""

import csv
import sys


def times(path):
    with open(path) as f:
        return {(r["op"], r["shape"], r["dtype"]): float(r["us"]) for r in csv.DictReader(f)
                if r["impl"] == "ltx"}


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    a, b = times(argv[0]), times(argv[1])
    print("| op | shape | dtype | A us | B us | B / A |\n|---|---|---|---|---|---|")
    for k in a:
        if k in b:
            print(f"| {' | '.join(k)} | {a[k]:.1f} | {b[k]:.1f} | {b[k] / a[k]:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
