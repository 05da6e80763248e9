#!/usr/bin/env python3
"""One line a profiled kernel from Nsight Compute's `--csv` output (`ncu --metrics ... --csv`,
one row a metric): its ID, the kernel name's start, and each metric's value and unit.

    python tools/ncu_csv_rows.py out/ncu-zero.csv
"""

from __future__ import annotations

import csv
import sys


def rows(path: str) -> dict:
    """{(ID, kernel name): {metric: "value unit"}} in the file's order (ncu's own lines, which
    do not start with a quote, are skipped)."""
    with open(path) as f:
        table = list(csv.reader(line for line in f if line.startswith('"')))
    if not table:
        return {}
    head, body = table[0], table[1:]
    ix = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Unit",
                                      "Metric Value")}
    out: dict = {}
    for r in body:
        key = (r[ix["ID"]], r[ix["Kernel Name"]])
        out.setdefault(key, {})[r[ix["Metric Name"]]] = \
            f'{r[ix["Metric Value"]]} {r[ix["Metric Unit"]]}'.strip()
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    for (i, name), metrics in rows(argv[0]).items():
        print(i, name[:40], "; ".join(f"{k}={v}" for k, v in metrics.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
