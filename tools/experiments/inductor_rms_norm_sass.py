#!/usr/bin/env python3
"""torch.compile's RMSNorm kernel compiled for sm_90 without a GPU, in every configuration
inductor's autotuner chooses from, for reading its SASS beside ours (issue 4's largest H200
gap: RMSNorm at D = 8192, compile 0.94x / 0.96x ahead; PERFORMANCE.md, changes 82, 99).

The kernel's source is the one inductor wrote on the H200 (`TORCH_LOGS=output_code`, run CC
call 1, committed as benchmarks/results/h200/run-cc/call1/inductor.log): the N-th Triton kernel
of the log (default: the first, rms_norm 1x16384x8192 bf16). The configurations are what
`torch._inductor.runtime.triton_heuristics._reduction_configs` returns for that kernel's size
hints and metadata (the installed torch's heuristics: run it with the device's torch, 2.11).
Each is compiled by Triton's ahead-of-time path for sm_90; its registers, spills and SASS
instruction mix (loads / stores by width, loop branches, total) are printed, and the cubin,
PTX and SASS written under --out:

    <torch 2.11 python> tools/experiments/inductor_rms_norm_sass.py --out /tmp/inductor-sass
    python tools/resources.py ltx_kernels_cuda/rms_norm.cu --cap 9.0 --sass   # ours

Needs torch (2.11, the device's) and its Triton (3.6).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from resources import cuobjdump, parse_resource_usage  # noqa: E402
LOG = ROOT / "benchmarks/results/h200/run-cc/call1/inductor.log"
PREFIX = re.compile(r"^V\d+ [\d:.]+ \d+ \S+\] \[[^\]]*\] \[__output_code\] ?")


def kernels_of(log_text: str) -> list[dict]:
    """Every Triton kernel of an output-code log: its name, source (the `@triton.jit`
    function), and the `size_hints`, `reduction_hint`, `triton_meta` and `inductor_meta` of
    its heuristics decorator (as text)."""
    lines = [PREFIX.sub("", ln.rstrip("\n")) for ln in log_text.splitlines()
             if "[__output_code]" in ln]
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("@triton_heuristics."):
            deco = []
            while not lines[i].startswith("@triton.jit"):
                deco.append(lines[i])
                i += 1
            j = i
            while j < len(lines) and not lines[j].startswith("''', device_str="):
                j += 1
            src = "\n".join(lines[i:j])
            name = re.search(r"def (\w+)\(", src).group(1)
            out.append(dict(name=name, src=src, decorator="\n".join(deco)))
            i = j
        i += 1
    return out


def field(decorator: str, key: str) -> str:
    """The text of `key=...,` in the decorator (one line each in inductor's output)."""
    m = re.search(rf"^\s*{key}=(.*?),?$", decorator, re.M)
    if m is None:
        raise ValueError(f"no {key} in the decorator")
    return m.group(1)


def sass_mix(sass: str) -> Counter:
    """Counts of the SASS instructions that say how the row is moved: loads and stores by
    width and cache hint, branches, and the total (NOPs left out)."""
    c: Counter = Counter()
    for ln in sass.splitlines():
        m = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", ln)
        if not m:
            continue
        op = m.group(1)
        if op.startswith("NOP"):
            continue
        c["total"] += 1
        if op.startswith(("LDG", "STG", "LDS", "STS", "BRA", "BAR", "SHFL", "MUFU")):
            c[op] += 1
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, default=LOG)
    ap.add_argument("--nth", type=int, default=0, help="which kernel of the log (from 0)")
    ap.add_argument("--out", type=Path, default=Path("inductor-sass"))
    args = ap.parse_args()

    import torch  # noqa: F401  (inductor's runtime imports it)
    import triton
    import triton.language as tl
    from torch._inductor.runtime import triton_helpers
    from torch._inductor.runtime.hints import DeviceProperties, ReductionHint  # noqa: F401
    from torch._inductor.runtime.triton_heuristics import _reduction_configs
    from torch._inductor.runtime.triton_helpers import libdevice
    from torch._inductor.runtime.triton_helpers import math as tl_math
    from triton.backends.compiler import GPUTarget

    ks = kernels_of(args.log.read_text())
    if not ks:
        print(f"no Triton kernel in {args.log}", file=sys.stderr)
        return 2
    k = ks[args.nth]
    print(f"# {k['name']} ({args.nth + 1} of {len(ks)} in {args.log.name})")
    # The kernel, defined in a file of its own (Triton reads a jit function's source).
    args.out.mkdir(parents=True, exist_ok=True)
    mod_path = args.out / f"{k['name']}.py"
    mod_path.write_text("import triton\nimport triton.language as tl\n"
                        "from torch._inductor.runtime import triton_helpers\n"
                        "from torch._inductor.runtime.triton_helpers import libdevice, "
                        "math as tl_math\n\n" + k["src"] + "\n")
    sys.path.insert(0, str(args.out))
    mod = __import__(k["name"])
    fn = getattr(mod, k["name"])

    env = dict(DeviceProperties=DeviceProperties, ReductionHint=ReductionHint, set=set)
    size_hints = ast.literal_eval(field(k["decorator"], "size_hints"))
    triton_meta = eval(field(k["decorator"], "triton_meta"), env)  # noqa: S307 (our own log)
    inductor_meta = eval(field(k["decorator"], "inductor_meta"), env)  # noqa: S307
    hint = field(k["decorator"], "reduction_hint")
    inductor_meta["reduction_hint"] = eval(hint, env)  # noqa: S307
    configs = _reduction_configs(size_hints=size_hints, inductor_meta=inductor_meta,
                                 triton_meta=triton_meta)
    sig = dict(triton_meta["signature"])
    names = list(sig)
    attrs = {(int(i[0]),): v for i, v in triton_meta["configs"][0].items()}
    tool = cuobjdump()
    for cfg in configs:
        consts = dict(cfg.kwargs)
        tag = "_".join(f"{n}{v}" for n, v in consts.items()) + f"_w{cfg.num_warps}"
        src = triton.compiler.ASTSource(fn=fn, signature=sig, attrs=attrs, constexprs={
            (names.index(n),): v for n, v in consts.items()})
        kk = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
        cubin = args.out / f"{tag}.cubin"
        cubin.write_bytes(kk.asm["cubin"])
        (args.out / f"{tag}.ptx").write_text(kk.asm["ptx"])
        sass = subprocess.run([tool, "-sass", str(cubin)], capture_output=True,
                              text=True, check=True).stdout
        (args.out / f"{tag}.sass").write_text(sass)
        res = subprocess.run([tool, "--dump-resource-usage", str(cubin)],
                             capture_output=True, text=True, check=True).stdout
        (_, (regs, stack, _, _)), = parse_resource_usage(res)
        mix = sass_mix(sass)
        print(f"{tag}: {cfg.num_warps * 32} threads, {regs} registers, stack {stack}; SASS "
              + ", ".join(f"{op} {n}" for op, n in sorted(mix.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
