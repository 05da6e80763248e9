#!/usr/bin/env python3
"""Conformance checks: the rules that fail a real Hub build or load, checked without Nix.

    python tools/check.py            # everything (builds what it needs)
    python tools/check.py --no-nvcc  # skip the CUDA compile check (minutes on 2 cores)

1. torch-ext: no pybind11 / torch/extension.h / py::, no TORCH_LIBRARY( / TORCH_LIBRARY_FRAGMENT /
   PyInit (registration goes through TORCH_LIBRARY_EXPAND + REGISTER_EXTENSION).
2. No setup.py.
3. The Python package: relative self-imports only, and no runtime imports beyond the standard
   library, torch and einops.
4. build.toml accepted by kernel-builder's own parser (kernels._rust.Build.open).
5. flake.nix parsed by `nix-instantiate --parse`.
6. Every built extension under build/ passes kernel-abi-check's Python ABI (abi3) check; the
   manylinux_2_28 result is reported (a local build is not expected to meet it).
7. Every .cu file compiles with nvcc for sm_75, sm_80 and sm_90 against the installed torch's
   headers (also on a CPU-only torch), and so does the binding with CUDA_KERNEL defined.

Exits non-zero when any check fails, listing every failure.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build as builder  # noqa: E402  (tools/build.py)

ROOT = builder.ROOT
NVCC_CAPS = ["7.5", "8.0", "9.0"]
ALLOWED_THIRD_PARTY = {"torch", "einops"}

failures: list[str] = []


def fail(msg: str) -> None:
    failures.append(msg)
    print(f"FAIL {msg}", flush=True)


def ok(msg: str) -> None:
    print(f"ok   {msg}", flush=True)


def check_torch_ext() -> None:
    forbidden = {
        "pybind11": re.compile(r"pybind11", re.I),
        "torch/extension.h": re.compile(r"torch/extension\.h"),
        "py::": re.compile(r"\bpy::"),
        "TORCH_LIBRARY(": re.compile(r"\bTORCH_LIBRARY\s*\("),
        "TORCH_LIBRARY_FRAGMENT": re.compile(r"TORCH_LIBRARY_FRAGMENT"),
        "PyInit": re.compile(r"PyInit"),
    }
    bad = 0
    for f in sorted((ROOT / "torch-ext").rglob("*")):
        if not f.is_file() or f.suffix not in (".cpp", ".h", ".hpp", ".cu", ".cuh", ".py"):
            continue
        text = f.read_text(errors="replace")
        for name, rx in forbidden.items():
            for m in rx.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                fail(f"{f.relative_to(ROOT)}:{line}: {name} is not allowed in torch-ext")
                bad += 1
    if not bad:
        ok("torch-ext: no pybind11, torch/extension.h, py::, TORCH_LIBRARY(, "
           "TORCH_LIBRARY_FRAGMENT, PyInit")


def check_no_setup_py() -> None:
    found = [p for p in ROOT.rglob("setup.py") if "build" not in p.relative_to(ROOT).parts[:1]
             and ".git" not in p.parts]
    if found:
        for p in found:
            fail(f"{p.relative_to(ROOT)}: no hand-written setup.py")
    else:
        ok("no setup.py")


def check_python_imports() -> None:
    cfg = builder.load_config()
    pkg_name = builder.python_name(cfg)
    pkg = ROOT / "torch-ext" / pkg_name
    stdlib = set(sys.stdlib_module_names)
    bad = 0
    for f in sorted(pkg.rglob("*.py")):
        tree = ast.parse(f.read_text(), filename=str(f))
        for node in ast.walk(tree):
            mods: list[str] = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level > 0:
                    continue  # relative: fine
                mods = [node.module or ""]
            for m in mods:
                top = m.split(".")[0]
                where = f"{f.relative_to(ROOT)}:{node.lineno}"
                if top == pkg_name:
                    fail(f"{where}: absolute self-import `{m}` (use a relative import)")
                    bad += 1
                elif top not in stdlib and top not in ALLOWED_THIRD_PARTY:
                    fail(f"{where}: runtime import of `{m}` (only stdlib, torch, einops)")
                    bad += 1
    if not bad:
        ok(f"torch-ext/{pkg_name}: relative self-imports only; runtime imports: stdlib, torch, einops")


def check_build_toml() -> None:
    try:
        from kernels._rust import Build
    except ImportError as e:
        fail(f"build.toml: cannot import kernels._rust ({e}); pip install kernels==0.17.2")
        return
    try:
        b = Build.open(str(ROOT))
        ok(f"build.toml accepted by kernel-builder's parser (kernels._rust.Build): {b.general}")
    except Exception as e:
        fail(f"build.toml rejected by kernel-builder's parser: {e}")


def check_sources_listed() -> None:
    """Every repository file that a listed source includes is listed in the same kernel's (or
    the binding's) `src`: kernel-builder builds from those files alone, so a header missing
    there compiles here and fails the Nix build."""
    import re
    import tomllib

    with open(ROOT / "build.toml", "rb") as f:
        toml = tomllib.load(f)
    lists = {"torch": toml["torch"]["src"]}
    lists.update({name: k["src"] for name, k in toml.get("kernel", {}).items()})
    include = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
    bad = 0
    for name, srcs in lists.items():
        listed = set(srcs) | set(lists["torch"])
        for src in srcs:
            path = ROOT / src
            if not path.exists():
                fail(f"build.toml [{name}]: listed source {src} does not exist")
                bad += 1
                continue
            for inc in include.findall(path.read_text()):
                # includes are relative to the repository root (include = ["."]) or the file
                cands = [ROOT / inc, path.parent / inc]
                hit = next((c for c in cands if c.exists()), None)
                if hit is None:
                    continue  # generated (registration.h) or outside the repository
                rel = hit.resolve().relative_to(ROOT).as_posix()
                if rel not in listed:
                    fail(f"build.toml [{name}]: {src} includes {rel}, which is not in its src")
                    bad += 1
    if not bad:
        ok("build.toml: every header a listed source includes is listed too")


def check_flake() -> None:
    nix = shutil.which("nix-instantiate")
    if nix is None:
        fail("flake.nix: nix-instantiate not found (apt-get install nix-bin)")
        return
    r = subprocess.run([nix, "--parse", str(ROOT / "flake.nix")], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"flake.nix does not parse: {r.stderr.strip()}")
        return
    text = (ROOT / "flake.nix").read_text()
    missing = [s for s in ("kernel-builder", "genKernelFlakeOutputs") if s not in text]
    if missing:
        fail(f"flake.nix does not follow kernel-builder's template (missing {missing})")
    else:
        ok("flake.nix parses (nix-instantiate --parse) and uses kernel-builder's genKernelFlakeOutputs")


def check_abi() -> None:
    try:
        import kernel_abi_check as kac
    except ImportError as e:
        fail(f"abi: cannot import kernel_abi_check ({e}); pip install kernel-abi-check")
        return
    sos = sorted((ROOT / "build").glob("*/*.abi3.so"))
    if not sos:
        fail("abi: no built extension under build/*/ (run python tools/build.py first)")
        return
    for so in sos:
        rel = so.relative_to(ROOT)
        obj = kac.ObjectFile(str(so))
        py = obj.check_python_abi("3.9")
        if py:
            fail(f"{rel}: not abi3-clean for Python >= 3.9: {py[:10]}")
        else:
            ok(f"{rel}: Python ABI abi3 (3.9+) clean")
        ml = obj.check_manylinux("manylinux_2_28")
        note = ("meets manylinux_2_28" if not ml else
                f"does not meet manylinux_2_28 ({len(ml)} symbols, e.g. "
                f"{', '.join(f'{s.name}@{s.dep}_{s.version}' for s in ml[:3])}); expected for a "
                "local build without kernel-builder's old-glibc sysroot")
        print(f"info {rel}: {note}", flush=True)


def check_nvcc(jobs: int, caps: list[str]) -> None:
    cfg = builder.load_config()
    t = builder.Torch.detect()
    build_dir = ROOT / "build"
    gen_dir = build_dir / ".check" / "gen"
    obj_dir = build_dir / ".check" / "obj"
    gen_dir.mkdir(parents=True, exist_ok=True)
    (gen_dir / "registration.h").write_text(builder.REGISTRATION_H)
    shim = builder.cuda_shim_include(build_dir, t.include)
    try:
        builder.find_cuda_home()
    except SystemExit as e:
        fail(f"nvcc: {e}")
        return
    all_jobs = builder.compile_jobs(cfg, "cuda", t, "_ltx_kernels_check", gen_dir, obj_dir,
                                    caps, jobs, shim)
    print(f"nvcc: compiling {len(all_jobs)} sources for {', '.join(caps)} "
          f"against torch {t.version[0]}.{t.version[1]} headers", flush=True)
    try:
        builder.run_jobs(all_jobs, jobs, verbose=False)
        ok("every CUDA source and the CUDA binding compile for "
           + ", ".join(f"sm_{c.replace('.', '')}" for c in caps))
    except SystemExit as e:
        fail(f"nvcc: {e}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--no-nvcc", action="store_true", help="skip the CUDA compile check")
    ap.add_argument("--nvcc-caps", default=",".join(NVCC_CAPS),
                    help="targets of the CUDA compile check (default 7.5,8.0,9.0; CI checks all)")
    ap.add_argument("-j", "--jobs", type=int, default=None)
    args = ap.parse_args(argv)
    import os

    jobs = args.jobs or os.cpu_count() or 2
    check_torch_ext()
    check_no_setup_py()
    check_python_imports()
    check_build_toml()
    check_sources_listed()
    check_flake()
    check_abi()
    if not args.no_nvcc:
        check_nvcc(jobs, [c.strip() for c in args.nvcc_caps.split(",") if c.strip()])
    if failures:
        print(f"\n{len(failures)} check(s) failed:", file=sys.stderr)
        for f in failures:
            print(f"  - {f}", file=sys.stderr)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
