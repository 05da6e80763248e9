#!/usr/bin/env python3
"""End-to-end LTX-Video benchmark: the diffusers transformer at real size (random weights, no
download) in a denoising loop with a flow-matching scheduler, with and without this package's
kernels, with and without torch.compile.

    python scripts/benchmark_example.py --num-frames 49 --height 512 --width 768 --cfg \\
        --batch-size 1 --steps 10 --all-configs --json ltx.json      # the H200 target setup
    python scripts/benchmark_example.py --model-size 13b --compile
    python scripts/benchmark_example.py --model-size tiny --device cpu --dtype fp32 \\
        --num-frames 9 --height 64 --width 64 --steps 2 --warmup-iterations 1   # smoke test

Latent shape from the LTX VAE: frames (F - 1) / 8 + 1, height / 32, width / 32 (49 frames at
768x512: 7 x 16 x 24 = 2688 tokens), 128 channels; the text is 128 prompt tokens (the
pipeline's default max length). With `--cfg` the transformer sees the batch twice
(unconditional + conditional), as the pipeline does.

Each configuration is timed twice: step by step (synchronized before and after each step;
median, mean, min) and over a second pass of the whole loop, synchronized only around it, as a
pipeline runs it (`ms_per_step_loop`: the host may prepare a step while the device runs the one
before).

`--cuda-graph` captures the transformer call in one CUDA graph after the warmup and replays
it at every step (each configuration, compiled or not): what is left is the device's work, with
no host time inside the call (guards, Python, launches).

`--profile` adds a profiler breakdown of one step's device time: matrix products, attention,
this package's kernels, and the rest (other elementwise / reduction kernels, copies), the part
the kernels and torch.compile are meant to shrink. `--profile-loop N` profiles N steps as the
loop runs them: how busy the device is there, per step, at the clocks the loop runs at.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (DTYPES, GpuMonitor, Timer, default_device, device_name,  # noqa: E402
                     first_sync, load_kernel, print_profile, profile_call, progress, rel_l2)

# diffusers' LTXVideoTransformer3DModel configs. "2b" is the class's default config (LTX-Video
# 0.9.x 2B); "13b" the LTX-Video 0.9.7 13B transformer (48 layers, 32 heads x 128 = 4096).
MODEL_SIZES = {
    "tiny": dict(num_layers=2, num_attention_heads=2, attention_head_dim=32,
                 cross_attention_dim=64, caption_channels=64),
    "2b": dict(num_layers=28, num_attention_heads=32, attention_head_dim=64,
               cross_attention_dim=2048, caption_channels=4096),
    "13b": dict(num_layers=48, num_attention_heads=32, attention_head_dim=128,
                cross_attention_dim=4096, caption_channels=4096),
}
LATENT_CHANNELS = 128
VAE_SPATIAL, VAE_TEMPORAL = 32, 8
TEXT_TOKENS = 128
FRAME_RATE = 25  # the pipeline's default; enters the rope interpolation scale

CONFIGS = {  # name -> (kernels, compile)
    "eager": (False, False),
    "compile": (False, True),
    "kernels": (True, False),
    "kernels+compile": (True, True),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--model-size", choices=list(MODEL_SIZES), default="2b")
    p.add_argument("--use-optimized-kernels", action=argparse.BooleanOptionalAction,
                   default=True, help="inject this package's kernels (default: yes)")
    p.add_argument("--compile", action="store_true", help="torch.compile the transformer "
                   "(after the injection when the kernels are used)")
    p.add_argument("--compile-scope", choices=["model", "blocks"], default="model",
                   help="compile the whole transformer, or each block (as diffusers' "
                   "compile_repeated_blocks)")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile mode (e.g. max-autotune-no-cudagraphs)")
    p.add_argument("--freeze", action="store_true",
                   help="inductor freezing for the compiled configurations: the weights are "
                   "folded into the compiled graph as constants instead of being graph inputs "
                   "checked at every call (715 of them in the 2B model; inference only: the "
                   "compiled model does not see later changes to the weights)")
    p.add_argument("--gelu-in-matmul", action="store_true",
                   help="with the kernels: the feed-forward's tanh GELU in its projection's "
                   "cuBLASLt epilogue (inject_ltx_video(gelu_in_matmul=True)) instead of "
                   "gelu_tanh after it")
    p.add_argument("--fuse-projections", action="store_true",
                   help="with the kernels: diffusers' fuse_qkv_projections() first "
                   "(inject_ltx_video(fuse_projections=True)): each self-attention's q, k, v "
                   "in one matrix product, cross-attention's k, v in one (under --freeze "
                   "inductor's freezing passes already concatenate q / k / v: this is for the "
                   "uncompiled kernels configuration)")
    p.add_argument("--cuda-graph", action="store_true",
                   help="capture each configuration's transformer call (both CFG halves) in "
                   "one CUDA graph after the warmup and replay it at every step: no Python, "
                   "guards or launches on the host within the call; the scheduler's update "
                   "runs outside it (CUDA only; with --compile, inductor's own CUDA graphs "
                   "(--compile-mode reduce-overhead / max-autotune) cannot be captured inside "
                   "it)")
    p.add_argument("--cublaslt-workspace-kib", type=int, default=None, metavar="KIB",
                   help="cuBLASLt's workspace for every configuration of the run (sets "
                   "CUBLASLT_WORKSPACE_SIZE, which PyTorch reads at its first cuBLASLt call). "
                   "0: on the H200 (torch 2.11, cuBLAS 13) cuBLASLt then picks variants of the "
                   "same matmul kernels that need no zeroed workspace, so the memset node "
                   "before each of the step's large matrix products is gone (PERFORMANCE.md, "
                   "run AA). Default: PyTorch's workspace")
    p.add_argument("--all-configs", action="store_true",
                   help="run eager, compile, kernels and kernels+compile in one process")
    p.add_argument("--compare", action="store_true",
                   help="also run the eager baseline, for the speedup")
    p.add_argument("--baseline-json", type=Path,
                   help="a previous --json result whose eager entry is the speedup baseline")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--num-frames", type=int, default=161)
    p.add_argument("--height", type=int, default=512)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--steps", type=int, default=10, help="timed denoising steps")
    p.add_argument("--warmup-iterations", type=int, default=2,
                   help="untimed steps first (compilation happens here)")
    p.add_argument("--cfg", action="store_true",
                   help="classifier-free guidance: the transformer runs on 2x the batch")
    p.add_argument("--guidance-scale", type=float, default=3.0)
    p.add_argument("--device", default=default_device())
    p.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-module-guards", action="store_true",
                   help="compiled configurations: no guards on the modules' attributes "
                   "(torch.compiler.skip_guard_on_all_nn_modules_unsafe: the host checks less "
                   "before each call; valid while nothing changes the model's attributes or "
                   "weights after compiling, as in this benchmark)")
    p.add_argument("--profile", action="store_true",
                   help="profiler breakdown of one step (per configuration)")
    p.add_argument("--profile-loop", type=int, default=0, metavar="N",
                   help="profile N steps as the timed loop runs them (no synchronization "
                   "between steps): how busy the device is per step there, at the clocks the "
                   "loop runs at (per configuration)")
    p.add_argument("--sync-debug", action="store_true",
                   help="after the timed loop, one more step (the second of a fresh schedule) "
                   "with torch.cuda.set_sync_debug_mode('error'): prints where the host first "
                   "waits for the device within a step, if it does (CUDA only)")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    if args.cublaslt_workspace_kib is not None and args.cublaslt_workspace_kib < 0:
        p.error(f"--cublaslt-workspace-kib must be >= 0, got {args.cublaslt_workspace_kib}")
    if (args.num_frames - 1) % VAE_TEMPORAL:
        p.error(f"--num-frames must be 8k + 1 (the VAE's temporal factor), got {args.num_frames}")
    if args.height % VAE_SPATIAL or args.width % VAE_SPATIAL:
        p.error(f"--height and --width must be multiples of {VAE_SPATIAL}")
    if args.cuda_graph:
        if torch.device(args.device).type != "cuda":
            p.error(f"--cuda-graph needs a CUDA device, got --device {args.device}")
        if args.compile_mode in ("reduce-overhead", "max-autotune"):
            p.error(f"--cuda-graph captures the whole call itself: --compile-mode "
                    f"{args.compile_mode} brings inductor's own CUDA graphs, which cannot be "
                    "captured inside it (use the default mode or max-autotune-no-cudagraphs)")
    return args


def selected_configs(args):
    if args.all_configs:
        return list(CONFIGS)
    name = {(False, False): "eager", (False, True): "compile", (True, False): "kernels",
            (True, True): "kernels+compile"}[(args.use_optimized_kernels, args.compile)]
    return (["eager"] if args.compare and name != "eager" else []) + [name]


def latent_shape(args):
    return ((args.num_frames - 1) // VAE_TEMPORAL + 1, args.height // VAE_SPATIAL,
            args.width // VAE_SPATIAL)


def build_transformer(args, dtype):
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(args.seed)
    with torch.device(args.device):
        model = LTXVideoTransformer3DModel(in_channels=LATENT_CHANNELS,
                                           out_channels=LATENT_CHANNELS,
                                           **MODEL_SIZES[args.model_size])
    return model.to(dtype).eval().requires_grad_(False)


def make_scheduler(num_tokens: int, steps: int, device):
    """LTX-Video's scheduler: flow matching with a resolution-dependent shift (`mu`
    interpolated between base and max shift over the token count, as the pipeline does)."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    s = FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True, base_shift=0.95,
                                        max_shift=2.05, base_image_seq_len=1024,
                                        max_image_seq_len=4096)
    m = (2.05 - 0.95) / (4096 - 1024)
    mu = num_tokens * m + (0.95 - m * 1024)
    sigmas = [1.0 - i / steps for i in range(steps)]
    s.set_timesteps(sigmas=sigmas, mu=mu, device=device)
    return s


class Workload:
    """The inputs of every step: latents (fp32, as the pipeline keeps them), prompt
    embeddings and mask (padded prompt: the last quarter of the tokens masked out)."""

    def __init__(self, args, dtype, caption_channels):
        f, h, w = latent_shape(args)
        self.f, self.h, self.w = f, h, w
        self.tokens = f * h * w
        g = torch.Generator(device="cpu").manual_seed(args.seed + 1)
        batch = args.batch_size * (2 if args.cfg else 1)
        self.latents = torch.randn(args.batch_size, self.tokens, LATENT_CHANNELS, generator=g)
        self.text = torch.randn(batch, TEXT_TOKENS, caption_channels, generator=g)
        self.mask = torch.ones(batch, TEXT_TOKENS)
        self.mask[:, TEXT_TOKENS * 3 // 4:] = 0
        self.latents = self.latents.to(args.device)
        self.text = self.text.to(args.device, dtype)
        self.mask = self.mask.to(args.device, dtype)
        self.rope_scale = (VAE_TEMPORAL / FRAME_RATE, VAE_SPATIAL, VAE_SPATIAL)
        self.cfg, self.guidance, self.dtype = args.cfg, args.guidance_scale, dtype

    def noise(self, model, latents, t):
        """The transformer's raw prediction (both CFG halves), fp32."""
        x = torch.cat([latents, latents]) if self.cfg else latents
        return model(hidden_states=x.to(self.dtype), encoder_hidden_states=self.text,
                     timestep=t.expand(x.shape[0]), encoder_attention_mask=self.mask,
                     num_frames=self.f, height=self.h, width=self.w,
                     rope_interpolation_scale=self.rope_scale, return_dict=False)[0].float()

    def step(self, call, scheduler, latents, t):
        """One denoising step; `call(latents, t)` is the transformer's raw prediction
        (`noise` bound to a model, or a `GraphedCall`)."""
        noise = call(latents, t)
        if self.cfg:
            uncond, cond = noise.chunk(2)
            noise = uncond + self.guidance * (cond - uncond)
        return scheduler.step(noise, t, latents, return_dict=False)[0]


class GraphedCall:
    """`work.noise(model, latents, t)` captured once in a CUDA graph and replayed: each call
    copies latents and timestep into the graph's own input tensors, replays, and returns the
    graph's output tensor (overwritten by the next call: the scheduler consumes it first).
    Captured after two calls on a side stream, as `torch.cuda.graphs` asks, so that lazy
    initializations (cuBLAS handles, the allocator's blocks) happen outside the capture."""

    def __init__(self, model, work, latents, t):
        self.latents, self.t = latents.clone(), t.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                work.noise(model, self.latents, self.t)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = work.noise(model, self.latents, self.t)

    def __call__(self, latents, t):
        self.latents.copy_(latents)
        self.t.copy_(t)
        self.graph.replay()
        return self.out


def prepare(args, config, dtype):
    """The transformer for one configuration, and the injection report (or None)."""
    use_kernels, use_compile = CONFIGS[config]
    model = build_transformer(args, dtype)
    report = None
    if use_kernels:
        kernel = load_kernel(args.device)
        report = kernel.integrations.inject_ltx_video(model, gelu_in_matmul=args.gelu_in_matmul,
                                                      fuse_projections=args.fuse_projections)
    if use_compile:
        import torch._inductor.config as inductor_config

        # read by inductor when it compiles (at the first call), so set for the process
        inductor_config.freezing = args.freeze
        if args.skip_module_guards:
            # torch.compile takes a mode or options, not both: the mode as its options
            from torch._inductor import list_mode_options

            kw = dict(fullgraph=True, options={
                **list_mode_options(args.compile_mode or "default"),
                "guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe})
        else:
            kw = dict(fullgraph=True, mode=args.compile_mode)
        if args.compile_scope == "model":
            model = torch.compile(model, **kw)
        else:
            for block in model.transformer_blocks:
                block.compile(**kw)
    return model, report


def run_config(args, config, dtype):
    model, report = prepare(args, config, dtype)
    caption = MODEL_SIZES[args.model_size]["caption_channels"]
    work = Workload(args, dtype, caption)
    with torch.no_grad():
        call = lambda latents, t: work.noise(model, latents, t)  # noqa: E731
        # warmup: its own scheduler, so the timed steps start from the first timestep
        warm = make_scheduler(work.tokens, max(args.warmup_iterations, 1), args.device)
        latents = work.latents.clone()
        with Timer(args.device) as first:
            for t in progress(warm.timesteps[: args.warmup_iterations], f"{config} warmup", args):
                latents = work.step(call, warm, latents, t)
            if args.cuda_graph:  # after the warmup: compiled code is what gets captured
                call = GraphedCall(model, work, work.latents, warm.timesteps[0])
        scheduler = make_scheduler(work.tokens, args.steps, args.device)
        latents = work.latents.clone()
        times = []
        with GpuMonitor(args.device) as gpu:
            for t in progress(scheduler.timesteps, f"{config}", args):
                with Timer(args.device) as step:
                    latents = work.step(call, scheduler, latents, t)
                times.append(step.seconds)
            assert torch.isfinite(latents).all(), f"{config}: non-finite latents"
            # The same steps as a pipeline runs them: no synchronization between steps, so the
            # host prepares step n + 1 (guards, launches) while the device runs step n; one
            # synchronization before and after the loop.
            scheduler = make_scheduler(work.tokens, args.steps, args.device)
            latents = work.latents.clone()
            with Timer(args.device) as loop:
                for t in scheduler.timesteps:
                    latents = work.step(call, scheduler, latents, t)
        assert torch.isfinite(latents).all(), f"{config}: non-finite latents (loop)"
        sync_point = None
        if args.sync_debug:
            sched, lat = after_first_step(call, work, 1, args.device)
            sync_point = first_sync(lambda: work.step(call, sched, lat, sched.timesteps[1]),
                                    args.device)
        # one model call on the first step's input, kept to compare configurations (through
        # the graph when there is one: its replays are what the timings measured)
        t0 = make_scheduler(work.tokens, 1, args.device).timesteps[0]
        probe = call(work.latents, t0).cpu()
        breakdown = profile_step(call, work, args) if args.profile else None
        loop_breakdown = profile_loop(call, work, args) if args.profile_loop > 0 else None
    ms = [1000 * s for s in times]
    result = {
        "config": config,
        "ms_per_step_median": statistics.median(ms),
        "ms_per_step_mean": statistics.fmean(ms),
        "ms_per_step_min": min(ms),
        "ms_per_step_loop": 1000 * loop.seconds / args.steps,
        "it_per_s": 1000 / statistics.median(ms),
        "warmup_s": first.seconds,
        "steps": len(ms),
        "ms_per_step": ms,
        "injection": dict(report.replaced) if report else None,
        "gpu_state": gpu.summary,
        "peak_memory_gib": (torch.cuda.max_memory_allocated() / 2**30
                            if torch.device(args.device).type == "cuda" else None),
        "profile": breakdown,
        "profile_loop": loop_breakdown,
        "sync_point": sync_point,
        "_probe": probe,
    }
    del model, call
    gc.collect()
    if torch.device(args.device).type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    torch._dynamo.reset()
    return result


def profile_step(call, work, args):
    """One denoising step under the profiler (see `_common.profile_call`)."""
    scheduler = make_scheduler(work.tokens, 1, args.device)
    t = scheduler.timesteps[0]
    return profile_call(lambda: work.step(call, scheduler, work.latents.clone(), t), args.device)


def after_first_step(call, work, steps: int, device: str):
    """A fresh schedule of `steps` + 1 steps with its first step run: `(scheduler, latents)`.
    The scheduler's first step looks its step index up with `.item()`, a synchronization,
    which the sync-debug step and the loop profile keep out of what they observe."""
    scheduler = make_scheduler(work.tokens, steps + 1, device)
    return scheduler, work.step(call, scheduler, work.latents.clone(), scheduler.timesteps[0])


def profile_loop(call, work, args):
    """`args.profile_loop` denoising steps under the profiler, unsynchronized as in the timed
    loop, after one step outside it (`after_first_step`). Where the one-step profile times the
    device work of an isolated step, this one shows whether the device idles between and
    inside steps of the loop, and its kernel times at the loop's clocks (`gpu_state`). Totals
    are over all N steps; `steps` says N."""
    n = args.profile_loop
    scheduler, first = after_first_step(call, work, n, args.device)

    def steps():
        latents = first
        for t in scheduler.timesteps[1:]:
            latents = work.step(call, scheduler, latents, t)

    with GpuMonitor(args.device) as gpu:
        prof = profile_call(steps, args.device)
    prof["steps"] = n
    prof["gpu_state"] = gpu.summary
    return prof


def check_agreement(results, args):
    """Each configuration's prediction on the same input against eager's (relative L2 error),
    so that a fast configuration that computes something else cannot pass unnoticed. Random
    weights in bf16 put the honest differences (reordered sums, fused roundings) near 1e-2."""
    probes = {r["config"]: r.pop("_probe") for r in results}
    ref = probes.get("eager")
    if ref is None:
        return
    limit = 1e-4 if args.dtype == "fp32" else 5e-2
    print("  prediction against eager (relative L2 error, same input):")
    for r in results:
        err = rel_l2(probes[r["config"]], ref)
        r["rel_err_vs_eager"] = err
        print(f"    {r['config']:16s} {err:.2e}{'' if err <= limit else '  <-- TOO LARGE'}")
        if err > limit:
            raise SystemExit(f"{r['config']}: prediction differs from eager by {err:.2e} "
                             f"(limit {limit:.0e} for {args.dtype})")
    # The same kernels with and without torch.compile around them: in run L a compile-only
    # error (inductor on the expanded rope tables) doubled kernels + compile's distance to
    # eager (1.28e-2 against 6.8e-3) and still passed the limit above; this one shows it.
    if "kernels" in probes and "kernels+compile" in probes:
        err = rel_l2(probes["kernels+compile"], probes["kernels"])
        next(r for r in results if r["config"] == "kernels+compile")["rel_err_vs_kernels"] = err
        print(f"  kernels+compile against kernels (relative L2 error): {err:.2e}")


def main(argv=None):
    args = parse_args(argv)
    if args.cublaslt_workspace_kib is not None:
        # before any matrix product of this process: PyTorch reads it once
        os.environ["CUBLASLT_WORKSPACE_SIZE"] = str(args.cublaslt_workspace_kib)
    dtype = DTYPES[args.dtype]
    f, h, w = latent_shape(args)
    tokens = f * h * w
    batch = args.batch_size * (2 if args.cfg else 1)
    header = {
        "model_size": args.model_size,
        "device": device_name(args.device),
        "dtype": args.dtype,
        "resolution": f"{args.width}x{args.height}",
        "num_frames": args.num_frames,
        "latent": [f, h, w],
        "tokens": tokens,
        "batch_size": args.batch_size,
        "cfg": args.cfg,
        "transformer_batch": batch,
        "compile_scope": args.compile_scope,
        "compile_mode": args.compile_mode,
        "skip_module_guards": args.skip_module_guards,
        "cuda_graph": args.cuda_graph,
        "freeze": args.freeze,
        "gelu_in_matmul": args.gelu_in_matmul,
        "fuse_projections": args.fuse_projections,
        # KiB; None: PyTorch's default (set here by --cublaslt-workspace-kib or by the caller)
        "cublaslt_workspace_kib": os.environ.get("CUBLASLT_WORKSPACE_SIZE"),
        "torch": torch.__version__,
    }
    print(f"LTX-Video {args.model_size} transformer on {header['device']}, {args.dtype}, "
          f"{args.num_frames} frames {args.width}x{args.height} -> latent {f}x{h}x{w} = "
          f"{tokens} tokens, batch {args.batch_size}{' x2 (CFG)' if args.cfg else ''}, "
          f"{args.steps} steps after {args.warmup_iterations} warmup"
          f"{'; each call one CUDA graph replay' if args.cuda_graph else ''}"
          + (f"; cuBLASLt workspace {header['cublaslt_workspace_kib']} KiB"
             if header["cublaslt_workspace_kib"] is not None else ""))
    results = []
    for config in selected_configs(args):
        r = run_config(args, config, dtype)
        results.append(r)
        print(f"  {config:16s} {r['ms_per_step_median']:9.2f} ms/step (median of steps timed "
              f"one by one; mean {r['ms_per_step_mean']:.2f}, min {r['ms_per_step_min']:.2f})  "
              f"{r['it_per_s']:7.2f} it/s  warmup {r['warmup_s']:.1f} s")
        print(f"  {'':16s} {r['ms_per_step_loop']:9.2f} ms/step over the loop ({args.steps} steps, "
              f"synchronized only before and after, as a pipeline runs)")
        if r["gpu_state"]:
            print(f"    {GpuMonitor.describe(r['gpu_state'])}")
        if args.sync_debug:
            sp = r["sync_point"]
            print("    sync debug: " + ("CUDA only" if sp is None else
                                        "no synchronizing call in a step" if not sp else
                                        "the host waits for the device at " + " <- ".join(
                                            reversed(sp))))
        for kind, n in (r["injection"] or {}).items():
            print(f"    injected {n:3d} x {kind}")
        if r["profile"]:
            print_profile(config, r["profile"])
        if r["profile_loop"]:
            pl = r["profile_loop"]
            print_profile(config, pl, what=f"{pl['steps']} steps of the loop")
            t = pl["timeline"]
            if t:
                n = pl["steps"]
                print(f"    per step of the loop: device span {t['device_span_ms'] / n:.2f} ms, "
                      f"busy {t['device_busy_ms'] / n:.2f} ms")
            if pl["gpu_state"]:
                print(f"    {GpuMonitor.describe(pl['gpu_state'])}")

    check_agreement(results, args)
    eager = next((r for r in results if r["config"] == "eager"), None)
    if eager is None and args.baseline_json:
        prev = json.loads(args.baseline_json.read_text())
        eager = next((r for r in prev["results"] if r["config"] == "eager"), None)
        if eager is None:
            print(f"  (no eager entry in {args.baseline_json})")
    baseline = eager["ms_per_step_median"] if eager else None
    base_loop = eager.get("ms_per_step_loop") if eager else None  # absent in older JSON
    if baseline is not None:
        print("  speedup against eager (steps timed one by one" +
              (", over the loop)" if base_loop else ")") + ":")
        for r in results:
            r["speedup_vs_eager"] = baseline / r["ms_per_step_median"]
            line = f"    {r['config']:16s} {r['speedup_vs_eager']:.3f}x"
            if base_loop:
                r["speedup_vs_eager_loop"] = base_loop / r["ms_per_step_loop"]
                line += f"  {r['speedup_vs_eager_loop']:.3f}x"
            print(line)
    if args.json:
        args.json.write_text(json.dumps({**header, "results": results}, indent=2))
        print(f"  wrote {args.json}")
    return results


if __name__ == "__main__":
    main()
