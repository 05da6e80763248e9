#!/usr/bin/env python3
"""The compiler's resource report for the CUDA kernels, without a GPU: compiles the given
sources (all .cu files by default) for one target with nvcc, the same flags as tools/build.py,
and prints each kernel instance's registers, stack frame, spills and local memory, read from the
object with cuobjdump (the CUDA toolkit's, or the one Triton's package carries).

    python tools/resources.py ltx_kernels_cuda/adaln.cu --cap 9.0 [--grep adaln_kernel] [--sass]

--sass also writes the disassembly to build/.resources/<source>.sass for reading (16-byte loads
are LDG.E.128, local memory shows as LDL / STL).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build as builder  # noqa: E402


def cuobjdump() -> str:
    for cand in (builder.find_cuda_home() / "bin" / "cuobjdump", shutil.which("cuobjdump")):
        if cand and Path(cand).exists():
            return str(cand)
    try:
        import triton

        cand = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        if cand.exists():
            return str(cand)
    except ImportError:
        pass
    raise SystemExit("cuobjdump not found (CUDA toolkit, or pip install triton)")


def demangle(names: list[str]) -> list[str]:
    cxxfilt = shutil.which("c++filt")
    if not cxxfilt:
        return names
    r = subprocess.run([cxxfilt], input="\n".join(names), capture_output=True, text=True)
    return r.stdout.splitlines() if r.returncode == 0 else names


def parse_resource_usage(text: str) -> list[tuple[str, tuple[int, int, int, int]]]:
    """(short demangled kernel name, (registers, stack, shared, local bytes)) for each function
    in `cuobjdump --dump-resource-usage` output."""
    names, stats = [], []
    for line in text.splitlines():
        m = re.search(r"Function (\S+):", line)
        if m:
            names.append(m.group(1))
        m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", line)
        if m:
            stats.append(tuple(int(g) for g in m.groups()))
    short = [re.sub(r"\(ltx::\w+Params<.*$", "", n).replace("__nv_bfloat16", "bf16")
             for n in demangle(names)]
    return list(zip(short, stats, strict=True))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="*", help="CUDA sources (default: every .cu in build.toml)")
    ap.add_argument("--cap", default="9.0", help="one compute capability, e.g. 9.0")
    ap.add_argument("--grep", default="", help="only kernels whose demangled name has this")
    ap.add_argument("--sass", action="store_true", help="also write the SASS")
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args(argv)

    cfg = builder.load_config()
    t = builder.Torch.detect()
    out = ROOT / "build" / ".resources"
    gen, obj = out / "gen", out / "obj"
    gen.mkdir(parents=True, exist_ok=True)
    (gen / "registration.h").write_text(builder.REGISTRATION_H)
    shim = builder.cuda_shim_include(ROOT / "build", t.include)
    jobs = builder.compile_jobs(cfg, "cuda", t, "_ltx_kernels_res", gen, obj, [args.cap],
                                args.j, shim)
    want = {str((ROOT / s).resolve()) for s in args.sources}
    jobs = [j for j in jobs if j.src.suffix == ".cu" and (not want or str(j.src) in want)]
    if not jobs:
        raise SystemExit("no matching CUDA sources")
    builder.run_jobs(jobs, args.j, verbose=False)
    tool = cuobjdump()
    for j in jobs:
        r = subprocess.run([tool, "--dump-resource-usage", str(j.obj)], capture_output=True,
                           text=True, check=True)
        print(f"== {j.src.relative_to(ROOT)} (sm_{args.cap.replace('.', '')})")
        rows = [(n, s) for n, s in parse_resource_usage(r.stdout) if args.grep in n]
        for n, (reg, stack, shared, local) in sorted(rows, key=lambda x: -x[1][0]):
            print(f"  REG {reg:3d} STACK {stack:4d} LOCAL {local:4d}  {n[:150]}")
        if args.sass:
            sass = out / (j.src.stem + ".sass")
            r = subprocess.run([tool, "--dump-sass", str(j.obj)], capture_output=True, text=True)
            sass.write_text(r.stdout)
            print(f"  SASS: {sass.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
