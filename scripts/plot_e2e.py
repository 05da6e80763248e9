#!/usr/bin/env python3
"""Plots end-to-end step times from `benchmark_example.py --profile` JSON: one horizontal bar
per configuration, its median step time (steps timed one by one) split into the profiled
step's device time by category (matrix products, attention, this package, the rest) and what
the device did not cover (host, gaps); a tick marks the time per step over the whole loop.

    python scripts/plot_e2e.py run.json --out e2e.png
    python scripts/plot_e2e.py m3-e2e.json:ltx2b n2-e2e.json:ltx2b-best-use --target 40 --out e2e.png

Each input is a benchmark_example JSON (with "results") or tools/gpu_e2e.sh's merged e2e.json
(runs by name); `file.json:run` picks one run of a merged file, `file.json:run:config` one
configuration, and a trailing `@tag` adds the tag to the bars' labels (e.g. `@run M`).
Configurations without a profile are drawn as their step time alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

# profile categories (scripts/_common.categorize) -> bar segment, in drawing order
SEGMENTS = {
    "gemm": "matrix products",
    "attention": "attention",
    "ours": "this package",
    "inductor elementwise / reduction": "other kernels",
    "other elementwise / reduction": "other kernels",
    "copy": "other kernels",
}
COLORS = {"matrix products": "#4c72b0", "attention": "#8172b2", "this package": "#dd8452",
          "other kernels": "#937860", "host / gaps": "#cccccc"}


def bar_parts(result: dict, profile: str = "step") -> dict[str, float]:
    """ms a step by segment: the profiled device time by category, then the median step
    time not covered by it ("host / gaps", never negative); without a profile, the step time
    alone as "host / gaps". `profile`: "step" takes the one step profiled on its own
    (`--profile`), "loop" the steps profiled inside the loop (`--profile-loop N`) divided by
    N, where the result has them (else the one step). The one-step profile runs slower than
    a timed step (its device total can exceed the median step); the loop's does not."""
    step = result["ms_per_step_median"]
    parts = {name: 0.0 for name in COLORS}
    prof, n = result.get("profile"), 1
    loop = result.get("profile_loop")
    if profile == "loop" and loop and loop.get("steps"):
        prof, n = loop, loop["steps"]
    if prof:
        for cat, ms in prof["categories_ms"].items():
            parts[SEGMENTS.get(cat, "other kernels")] += ms / n
    parts["host / gaps"] = max(step - sum(parts.values()), 0.0)
    return parts


def load(spec: str) -> list[tuple[str, dict]]:
    """(label, result) for each configuration an input names (see the module doc)."""
    spec, _, tag = spec.partition("@")
    path, _, rest = spec.partition(":")
    run, _, config = rest.partition(":")
    data = json.loads(Path(path).read_text())
    runs = {"": data} if "results" in data else data
    if run:
        if run not in runs:
            raise SystemExit(f"{path}: no run {run!r} (has: {', '.join(runs)})")
        runs = {run: runs[run]}
    out = []
    for name, d in runs.items():
        for r in d["results"]:
            if config and r["config"] != config:
                continue
            compiled, kernels = "compile" in r["config"], "kernels" in r["config"]
            mode = d.get("compile_mode")
            flags = [f for f, on in (
                ("freeze", compiled and d.get("freeze")),
                ("CUDA graphs" if mode == "reduce-overhead" else mode, compiled and mode),
                ("GELU in matmul", kernels and d.get("gelu_in_matmul")),
                ("fused q/k/v", kernels and d.get("fuse_projections")),
                ("no module guards", compiled and d.get("skip_module_guards"))) if on]
            label = r["config"] + (f" ({', '.join(flags)})" if flags else "")
            label += f" [{tag}]" if tag else ""
            out.append((label, r))
    if not out:
        raise SystemExit(f"{spec}: no configuration")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="file.json[:run[:config]]")
    ap.add_argument("--out", type=Path, required=True, help="the PNG to write")
    ap.add_argument("--target", type=float, action="append", default=[],
                    help="ms a step to mark (repeatable)")
    ap.add_argument("--title", default=None)
    ap.add_argument("--profile", choices=("step", "loop"), default="step",
                    help="the device time by category from the one step profiled on its own "
                         "(default) or from the loop's profiled steps, per step")
    args = ap.parse_args(argv)
    bars = [b for spec in args.inputs for b in load(spec)]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 0.55 * len(bars) + 1.8))
    y = list(range(len(bars)))[::-1]
    left = [0.0] * len(bars)
    for seg, color in COLORS.items():
        widths = [bar_parts(r, args.profile)[seg] for _, r in bars]
        ax.barh(y, widths, left=left, color=color, label=seg, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    loop = [(yy, r["ms_per_step_loop"]) for yy, (_, r) in zip(y, bars)
            if r.get("ms_per_step_loop")]
    if loop:
        ax.scatter([v for _, v in loop], [yy for yy, _ in loop], marker="|", s=400,
                   color="black", zorder=3, label="over the loop")
    for yy, (_, r) in zip(y, bars):
        ax.text(r["ms_per_step_median"] + 0.4, yy, f"{r['ms_per_step_median']:.2f}",
                va="center", fontsize=8)
    for t in args.target:
        ax.axvline(t, color="red", ls="--", lw=1)
        ax.text(t, -0.75, f" {t:g} ms", color="red", fontsize=8)
    ax.set_yticks(y, [label for label, _ in bars], fontsize=8)
    ax.set_xlabel("ms a denoising step (median of steps timed one by one)")
    ax.set_xlim(0, max(left) * 1.12)
    ax.legend(fontsize=8, loc="lower right")
    if args.title:
        fig.suptitle("\n".join(textwrap.wrap(args.title, 120)), fontsize=9)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    plt.close(fig)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
