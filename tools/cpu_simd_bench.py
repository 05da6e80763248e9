"""The CPU ops on this machine's CPU, per LTX_CPU_SIMD setting, against PyTorch.

    python3 tools/cpu_simd_bench.py [--ops activations,norms] [--threads 1] [--numel 4194304]
                                    [--repeats 5] [--against OTHER_BUILD_VARIANT]

`activations`: silu, gelu_tanh over `--numel` elements; silu_and_mul, silu_mul, geglu (tanh
and erf) over rows of 2 x 8192 (`--numel` elements in). `norms`: rms_norm, adaln,
gated_residual_adaln, gated_residual, rope, rms_norm_rope, fused_add_rms_norm, adaln with a
LayerNorm, adaln per token, rope_qk and rms_norm_rope_qk over rows of 2048 (`--numel` elements
a tensor; a per-sample modulation / gate row unless per token, interleaved rope over the whole
row; q and k of one shape). The PyTorch column is the op's formula in eager ops.

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
import importlib.util, json, sys, time, torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from scripts._common import load_kernel
threads, numel, repeats = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ops, against = sys.argv[5].split(","), sys.argv[6]
torch.set_num_threads(threads)
k = load_kernel("cpu")
old = None
if against:  # another build's variant folder, loaded beside this one under its own name
    spec = importlib.util.spec_from_file_location(
        "ltx_against", f"{against}/__init__.py", submodule_search_locations=[against])
    old = importlib.util.module_from_spec(spec)
    sys.modules["ltx_against"] = old
    spec.loader.exec_module(old)
def best(fn):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return 1e3 * min(ts)
rows = []
g = torch.Generator().manual_seed(0)
def rope_ref(x, c, s):  # interleaved pairs (2i, 2i+1)
    a, b = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    cf, sf = c.float()[..., 0::2], s.float()[..., 0::2]
    return torch.stack([a * cf - b * sf, b * cf + a * sf], -1).flatten(-2).to(x.dtype)
def cases_of(dt):
    # name -> (ours as a function of the module, PyTorch's formula)
    cases = {}
    if "activations" in ops:
        x = torch.randn(numel, generator=g).to(dt)
        xg = torch.randn(numel // 8192, 2 * 8192, generator=g).to(dt)  # rows of 2 x 8192
        cases.update({
            "silu": (lambda m: m.silu(x), lambda: F.silu(x)),
            "gelu_tanh": (lambda m: m.gelu_tanh(x), lambda: F.gelu(x, approximate="tanh")),
            "silu_and_mul": (lambda m: m.silu_and_mul(xg),
                             lambda: F.silu(xg[:, :8192]) * xg[:, 8192:]),
            "silu_mul": (lambda m: m.silu_mul(xg[:, :8192], xg[:, 8192:]),
                         lambda: F.silu(xg[:, :8192]) * xg[:, 8192:]),
            "geglu": (lambda m: m.geglu(xg, "tanh"),
                      lambda: xg[:, :8192] * F.gelu(xg[:, 8192:], approximate="tanh")),
            "geglu_erf": (lambda m: m.geglu(xg, "none"),
                          lambda: xg[:, :8192] * F.gelu(xg[:, 8192:])),
        })
    if "norms" in ops:
        D = 2048
        S = max(1, numel // D)
        x, y = (torch.randn(S, D, generator=g).to(dt) for _ in range(2))
        w = (1 + 0.1 * torch.randn(D, generator=g)).to(dt)
        sc, sh, gt = ((0.1 * torch.randn(1, D, generator=g)).to(dt) for _ in range(3))
        cos, sin = (torch.randn(S, D, generator=g).to(dt) for _ in range(2))
        x4, c4, s4 = x.view(1, S, 1, D), cos.view(1, S, 1, D), sin.view(1, S, 1, D)
        xa, ra = x.clone(), y.clone()
        st, ht = ((0.1 * torch.randn(S, D, generator=g)).to(dt) for _ in range(2))
        norm = lambda t: F.rms_norm(t, (D,), None, 1e-6)
        cases.update({
            "rms_norm": (lambda m: m.rms_norm(x, w, 1e-6), lambda: F.rms_norm(x, (D,), w, 1e-6)),
            "adaln": (lambda m: m.adaln(x, sc, sh), lambda: norm(x) * (1 + sc) + sh),
            "gated_residual_adaln": (lambda m: m.gated_residual_adaln(x, y, gt, sc, sh),
                                     lambda: norm(x + y * gt) * (1 + sc) + sh),
            "gated_residual": (lambda m: m.gated_residual(x, y, gt), lambda: x + y * gt),
            "rope": (lambda m: m.rope(x4, c4, s4, interleaved=True),
                     lambda: rope_ref(x, cos, sin)),
            "rms_norm_rope": (lambda m: m.rms_norm_rope(x.view(1, S, D), w, cos, sin, 1e-6,
                                                        interleaved=True),
                              lambda: rope_ref(F.rms_norm(x, (D,), w, 1e-6), cos, sin)),
            # in place on xa / ra (values stay bounded: xa is re-normalized every call);
            # PyTorch: the unfused sum and norm
            "fused_add_rms_norm": (lambda m: m.fused_add_rms_norm(xa, ra, w, 1e-6),
                                   lambda: F.rms_norm(x + y, (D,), w, 1e-6)),
            "adaln_layer": (lambda m: m.adaln(x, sc, sh, norm="layer"),
                            lambda: F.layer_norm(x, (D,), eps=1e-6) * (1 + sc) + sh),
            "adaln_per_token": (lambda m: m.adaln(x, st, ht),
                                lambda: norm(x) * (1 + st) + ht),
            "rope_qk": (lambda m: m.rope_qk(x4, y.view(1, S, 1, D), c4, s4, interleaved=True),
                        lambda: (rope_ref(x, cos, sin), rope_ref(y, cos, sin))),
            "rms_norm_rope_qk": (
                lambda m: m.rms_norm_rope_qk(x.view(1, S, D), y.view(1, S, D), w, w, cos, sin,
                                             1e-6, interleaved=True),
                lambda: (rope_ref(F.rms_norm(x, (D,), w, 1e-6), cos, sin),
                         rope_ref(F.rms_norm(y, (D,), w, 1e-6), cos, sin))),
        })
    return cases
for dt in (torch.float32, torch.bfloat16, torch.float16):
    for name, (ours, torch_fn) in cases_of(dt).items():
        row = {"op": name, "dtype": str(dt).replace("torch.", "")}
        if old is None:
            row["ours"] = best(lambda: ours(k))
        else:  # interleaved, three times each: the machine's speed drifts
            mine, theirs = [], []
            for _ in range(3):
                theirs.append(best(lambda: ours(old)))
                mine.append(best(lambda: ours(k)))
            row["ours"], row["against"] = min(mine), min(theirs)
        row["torch"] = best(torch_fn)
        rows.append(row)
print(json.dumps(rows))
"""

ISA = {"0": "scalar loop", "1": "AVX2", None: "default"}


def run(setting, args, against: str = "") -> list:
    env = {k: v for k, v in os.environ.items() if k != "LTX_CPU_SIMD"}
    if setting is not None:
        env["LTX_CPU_SIMD"] = setting
    p = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(args.threads), str(args.numel),
                        str(args.repeats), args.ops, against], env=env, capture_output=True,
                       text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"LTX_CPU_SIMD={setting}: failed\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--numel", type=int, default=4 * 1024 * 1024)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ops", default="activations,norms",
                    help="comma-separated groups: activations, norms")
    ap.add_argument("--against", type=Path, default=None,
                    help="another CPU build's variant folder (e.g. a worktree of an earlier "
                         "commit, built there; another revision, so that its op namespace "
                         "differs): its ops timed beside this build's under the default "
                         "setting, interleaved in one process (column 'against')")
    args = ap.parse_args(argv)
    bad = set(args.ops.split(",")) - {"activations", "norms"}
    if bad:
        ap.error(f"--ops: unknown {sorted(bad)}; groups: activations, norms")
    if args.against is not None and not (args.against / "__init__.py").is_file():
        ap.error(f"--against {args.against}: not a build variant folder (no __init__.py)")
    import torch

    cap = torch.backends.cpu.get_cpu_capability()
    results = {}
    for setting in ISA:
        print(f"LTX_CPU_SIMD={setting if setting is not None else '(unset)'} ...", file=sys.stderr)
        against = str(args.against.resolve()) if args.against and setting is None else ""
        results[setting] = run(setting, args, against)
    print(f"{args.numel} elements, {args.threads} thread(s), best of {args.repeats}, ms; "
          f"PyTorch's CPU capability: {cap}; default = the widest ISA the CPU has"
          + (f"; against: {args.against} (default setting, best of 3 interleaved runs each)"
             if args.against else "") + "\n")
    cols = [*ISA.values(), *(["against"] if args.against else []), "PyTorch"]
    print("| op | dtype | " + " | ".join(cols) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in cols) + " |")
    for i, row in enumerate(results[None]):
        times = [results[s][i]["ours"] for s in ISA]
        if args.against:
            times.append(row["against"])
        times.append(row["torch"])
        print(f"| {row['op']} | {row['dtype']} | " + " | ".join(f"{t:.1f}" for t in times) + " |")


if __name__ == "__main__":
    main()
