#!/usr/bin/env python3
"""Where the host's time goes in LTX-Video denoising steps (cProfile), per configuration.

The kernels configuration (no compile) is host-bound: on the H200 its device work is ~38 ms a
step while the step takes 41-55 ms one by one (PERFORMANCE.md, issue 5). This runs the same
model and workload as `scripts/benchmark_example.py` (its arguments, e.g. `--num-frames 49
--height 512 --width 768 --cfg`), times `--steps` steps one by one without a profiler, then
`--profile-steps` more under cProfile, and prints: ms a step without and with the profiler,
the functions with the most own time, the own time summed per source file, and the
cumulative time of the functions of this package's integration and of diffusers' attention
dispatch.

    python tools/host_profile.py --configs kernels,eager --num-frames 49 --height 512 \\
        --width 768 --cfg --json host.json
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import benchmark_example as be  # noqa: E402


def short(path: str) -> str:
    """A source path from its package on (`diffusers/models/attention.py`), or as is."""
    for marker in ("site-packages/", "torch-ext/", "/build/", "scripts/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def synced_step(work, model, scheduler, latents, t, device):
    latents = work.step(lambda x, s: work.noise(model, x, s), scheduler, latents, t)
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return latents


def profile_config(args, config: str, dtype) -> dict:
    model, _ = be.prepare(args, config, dtype)
    work = be.Workload(args, dtype, be.MODEL_SIZES[args.model_size]["caption_channels"])
    n = args.steps + args.profile_steps
    result = {"config": config}
    with torch.no_grad():
        scheduler = be.make_scheduler(work.tokens, n + args.warmup_iterations, args.device)
        steps = list(scheduler.timesteps)
        latents = work.latents.clone()
        for t in steps[: args.warmup_iterations]:
            latents = synced_step(work, model, scheduler, latents, t, args.device)
        steps = steps[args.warmup_iterations:]
        ms = []
        for t in steps[: args.steps]:
            t0 = time.perf_counter()
            latents = synced_step(work, model, scheduler, latents, t, args.device)
            ms.append(1000 * (time.perf_counter() - t0))
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        for t in steps[args.steps:]:
            latents = synced_step(work, model, scheduler, latents, t, args.device)
        prof.disable()
        profiled = 1000 * (time.perf_counter() - t0) / args.profile_steps
    stats = pstats.Stats(prof)
    per = args.profile_steps
    rows = []  # (own ms a step, cumulative ms a step, calls a step, name)
    files: dict[str, float] = {}
    for (path, line, name), (cc, nc, tt, ct, _callers) in stats.stats.items():
        where = f"{short(path)}:{line}({name})" if path != "~" else name
        rows.append((1000 * tt / per, 1000 * ct / per, nc / per, where))
        key = short(path) if path != "~" else "(built-in: C functions, torch ops)"
        files[key] = files.get(key, 0.0) + 1000 * tt / per
    result.update(ms_per_step_median=statistics.median(ms), ms_per_step=ms,
                  ms_per_step_profiled=profiled)
    result["own"] = sorted(rows, reverse=True)[: args.top]
    result["files"] = sorted(((v, k) for k, v in files.items()), reverse=True)[: args.top]
    marks = ("ltx_kernels", "integrations/", "attention_dispatch.py", "attention_processor.py",
             "attention.py", "transformer_ltx.py")
    result["cumulative"] = sorted((r for r in rows if any(m in r[3] for m in marks)),
                                  key=lambda r: -r[1])[: args.top]
    del model
    torch._dynamo.reset()
    return result


def report(r: dict) -> None:
    print(f"  {r['config']}: {r['ms_per_step_median']:.2f} ms a step one by one (median of "
          f"{len(r['ms_per_step'])}), {r['ms_per_step_profiled']:.2f} under cProfile")
    print("    own time a step (ms), cumulative, calls a step, function:")
    for own, cum, calls, where in r["own"]:
        print(f"      {own:8.3f} {cum:8.3f} {calls:7.0f}  {where}")
    print("    own time a step by source file (ms):")
    for ms, path in r["files"]:
        print(f"      {ms:8.3f}  {path}")
    print("    cumulative time a step of the integration's, diffusers' attention's and the "
          "model's functions (ms):")
    for own, cum, calls, where in r["cumulative"]:
        print(f"      {cum:8.3f} {calls:7.0f}  {where}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default="kernels",
                    help="comma-separated, of " + ", ".join(be.CONFIGS))
    ap.add_argument("--profile-steps", type=int, default=3,
                    help="steps under cProfile, after the timed ones")
    ap.add_argument("--top", type=int, default=25, help="rows a list")
    ap.add_argument("--json", type=Path, help="write the results here")
    own, rest = ap.parse_known_args(argv)
    args = be.parse_args(rest + ["--no-progress"])
    configs = [c for c in own.configs.split(",") if c]
    bad = [c for c in configs if c not in be.CONFIGS]
    if bad or own.profile_steps < 1:
        ap.error(f"unknown configs {bad} (of {list(be.CONFIGS)}) or --profile-steps < 1")
    args.profile_steps, args.top = own.profile_steps, own.top
    dtype = be.DTYPES[args.dtype]
    print(f"LTX-Video {args.model_size} on {be.device_name(args.device)}, {args.dtype}, "
          f"{args.steps} steps one by one then {args.profile_steps} under cProfile", flush=True)
    results = []
    for config in configs:
        r = profile_config(args, config, dtype)
        report(r)
        results.append(r)
    if own.json:
        own.json.write_text(json.dumps(results, indent=1))
        print(f"  wrote {own.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
