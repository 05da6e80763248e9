#!/usr/bin/env python3
"""Our kernels' times from two sides of an A/B side by side:

    ab_table.py A/sweep.csv B/sweep.csv
    ab_table.py A1/sweep.csv A2/sweep.csv -- B1/sweep.csv B2/sweep.csv
    ab_table.py --peer liger A1/sweep.csv A2/sweep.csv -- B1/sweep.csv B2/sweep.csv

prints a markdown table of every case in both sides (op, shape, dtype): each side's times (the
mean of its runs, each run's time listed when a side has several) and B / A of the means. With
several runs a side, run them interleaved (A B A B) on one lease, so that drift shows as spread
within a side instead of a difference between them.

--peer NAME: the sweeps also timed that implementation (e.g. `--impls ltx,liger`); the table
adds, for each side, the peer's mean time and ours as a share of the peer's speed measured in
the same runs (peer / ours: above 1 ours is faster), so that a knob is judged against a peer
timed beside it in the same processes, not only against the other side. A case that lacks the
peer in any run is left out."""

import csv
import statistics
import sys


def times(path, impl="ltx"):
    with open(path) as f:
        return {(r["op"], r["shape"], r["dtype"]): float(r["us"]) for r in csv.DictReader(f)
                if r["impl"] == impl}


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
    return a, b


def cell(runs):
    m = statistics.fmean(runs)
    return f"{m:.1f}" if len(runs) == 1 else f"{m:.1f} ({' '.join(f'{x:.1f}' for x in runs)})"


def main(argv):
    peer = None
    if argv[:1] == ["--peer"]:
        if len(argv) < 2:
            raise SystemExit(__doc__)
        peer, argv = argv[1], argv[2:]
    paths_a, paths_b = sides(argv)
    a, b = [times(p) for p in paths_a], [times(p) for p in paths_b]
    if peer is None:
        print("| op | shape | dtype | A us | B us | B / A |\n|---|---|---|---|---|---|")
    else:
        qa, qb = [times(p, peer) for p in paths_a], [times(p, peer) for p in paths_b]
        print(f"| op | shape | dtype | A us | B us | B / A | {peer} (A runs) us | "
              f"{peer} (B runs) us | A: {peer} / ours | B: {peer} / ours |\n"
              "|---|---|---|---|---|---|---|---|---|---|")
    for k in a[0]:
        ra, rb = [t[k] for t in a if k in t], [t[k] for t in b if k in t]
        if len(ra) != len(a) or len(rb) != len(b):
            continue
        ma, mb = statistics.fmean(ra), statistics.fmean(rb)
        row = f"| {' | '.join(k)} | {cell(ra)} | {cell(rb)} | {mb / ma:.3f} |"
        if peer is not None:
            xa, xb = [t[k] for t in qa if k in t], [t[k] for t in qb if k in t]
            if len(xa) != len(qa) or len(xb) != len(qb):
                continue
            row += (f" {cell(xa)} | {cell(xb)} | {statistics.fmean(xa) / ma:.3f} | "
                    f"{statistics.fmean(xb) / mb:.3f} |")
        print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
