"""The CPU activations on this machine's CPU, per LTX_CPU_SIMD setting, against PyTorch.

    python3 tools/cpu_simd_bench.py [--threads 1] [--numel 4194304] [--repeats 5]

Each setting (0: the scalar loops, 1: at most AVX2 + FMA + F16C, the default: the widest the CPU
has) runs in its own process (the setting is read once), on the local CPU build
(`python3 tools/build.py --backends cpu`), with `--threads` intra-op threads; each time is the
best of `--repeats` after a warm-up call, in ms. Prints a markdown table (PERFORMANCE.md, "The
CPU backend"). Settings the CPU lacks fall back to the widest it has (the table says which ISA
ran).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from scripts._common import load_kernel
threads, numel, repeats = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
k = load_kernel("cpu")
def best(fn):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return 1e3 * min(ts)
rows = []
g = torch.Generator().manual_seed(0)
for dt in (torch.float32, torch.bfloat16, torch.float16):
    x = torch.randn(numel, generator=g).to(dt)
    xg = torch.randn(numel // 8192, 2 * 8192, generator=g).to(dt)  # gated: rows of 2 x 8192
    cases = {
        "silu": (lambda: k.silu(x), lambda: F.silu(x)),
        "gelu_tanh": (lambda: k.gelu_tanh(x), lambda: F.gelu(x, approximate="tanh")),
        "silu_and_mul": (lambda: k.silu_and_mul(xg),
                         lambda: F.silu(xg[:, :8192]) * xg[:, 8192:]),
    }
    for name, (ours, torch_fn) in cases.items():
        rows.append({"op": name, "dtype": str(dt).replace("torch.", ""), "ours": best(ours),
                     "torch": best(torch_fn)})
print(json.dumps(rows))
"""

ISA = {"0": "scalar loop", "1": "AVX2", None: "default"}


def run(setting, args) -> list:
    env = {k: v for k, v in os.environ.items() if k != "LTX_CPU_SIMD"}
    if setting is not None:
        env["LTX_CPU_SIMD"] = setting
    p = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(args.threads), str(args.numel),
                        str(args.repeats)], env=env, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"LTX_CPU_SIMD={setting}: failed\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--numel", type=int, default=4 * 1024 * 1024)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    import torch

    cap = torch.backends.cpu.get_cpu_capability()
    results = {}
    for setting in ISA:
        print(f"LTX_CPU_SIMD={setting if setting is not None else '(unset)'} ...", file=sys.stderr)
        results[setting] = run(setting, args)
    print(f"{args.numel} elements, {args.threads} thread(s), best of {args.repeats}, ms; "
          f"PyTorch's CPU capability: {cap}; default = the widest ISA the CPU has\n")
    print("| op | dtype | " + " | ".join(ISA.values()) + " | PyTorch |")
    print("| --- | --- | " + " | ".join("---" for _ in ISA) + " | --- |")
    for i, row in enumerate(results[None]):
        ours = [results[s][i]["ours"] for s in ISA]
        print(f"| {row['op']} | {row['dtype']} | " + " | ".join(f"{t:.1f}" for t in ours)
              + f" | {row['torch']:.1f} |")


if __name__ == "__main__":
    main()
