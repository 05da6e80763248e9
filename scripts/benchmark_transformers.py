#!/usr/bin/env python3
"""End-to-end transformers benchmark: a LLaMA-8B-sized model (random weights, no download),
one forward (prefill) over a batch of prompts, in four configurations: eager, kernels (this
package's layers through `kernels.kernelize`: RMSNorm, rotary_pos_emb, SiLU), compile
(`torch.compile`), kernels+compile (rotary_pos_emb only; `--compile-layers` changes that).
Under torch.compile the other layers cost more than they save: inductor fuses each residual
add into the RMSNorm after it and `silu(gate) * up` into one pass, which an opaque RMSNorm or
SiLU layer prevents (run H on the H200: kernels + compile 0.997x of compile with RMSNorm and
rope mapped, 1.010x with rope alone). Both kernels configurations also run
`integrations.fuse_decoder_residuals` (each residual add fused with the RMSNorm after it,
across layers too, which the per-layer compile below cannot fuse) and
`integrations.fuse_gated_mlp` (the MLP's `silu(gate) * up` in one `silu_mul` pass, in place
of the SiLU layer and a multiply, or of inductor's kernel for the two); `--no-fuse`: neither;
the extra configuration `kernels+compile-unfused` is kernels+compile without them, for an A/B
in one process. The extra configurations `kernels+proj` and `kernels+compile+proj` also run
`integrations.fuse_projections` (q / k / v in one matrix product, gate / up in another read by
`silu_and_mul`): a change of the model's matrix products, not of this package's kernels, so
it is reported beside kernels and kernels+compile, not folded into them. `kernels+qkv` and
`kernels+compile+qkv` fuse only q / k / v (`fuse_projections(model, mlp=False)`), to tell
the two fusions apart: on an H100 (run JJ) the 28672-column gate / up product took 1320 and
1317 us against 1234 and 1380 for its halves in two calls, so a probe alone could not rank it.

Every configuration's last-position logits are checked against an fp32 forward of the same
weights (rounded to the run's dtype): no configuration may be further from it than twice
eager's own distance, so a fast configuration that computes something else cannot pass.

    python scripts/benchmark_transformers.py --batch-size 1 --seq-len 4096 --json llama.json
    python scripts/benchmark_transformers.py --model-size tiny --device cpu --dtype fp32 \\
        --seq-len 32 --iterations 2 --warmup-iterations 1          # smoke test

`--compile-scope layers` (the default) compiles each decoder layer (`nn.Module.compile`, one
graph shared by all layers because the forward runs with `use_cache=False`; with a KV cache
dynamo guards on each cache layer's state and compiles every layer again) and leaves the
embedding, the causal-mask construction and the head eager; `--compile-scope model` compiles
the whole forward. The difference is attention:
under a whole-model compile, transformers 5.22 with torch < 2.14 cannot tell tracing from
exporting, materializes the causal mask and SDPA runs with it (cuDNN attention 31.2 ms
against 9.1 ms with `is_causal` for 4096 tokens on the H200); per layer, the mask is built
eagerly, is None, and SDPA takes `is_causal` as in eager.

Only the last position's logits are computed (`logits_to_keep=1`), as generation's prefill
does, so the 128k-vocabulary head does not dominate.

`--rounds N` (N > 1) builds and warms every configuration first, then times them in N rounds of
`--iterations` forwards each, in alternating order (forward, then reversed), so that a drift of
the GPU's clocks over the run reaches every configuration alike (on the H200 the GEMMs of the
configuration timed first ran 7-8% faster than the same GEMMs later). The rope function layer
that kernelize sets for the whole process is switched to each configuration's own before its
forwards (torch.compile's guards then pick that configuration's graph); each configuration's
profile is still checked for kernels it must not run.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (DTYPES, ROOT, TRANSFORMERS_LAYERS, GpuMonitor, Timer,  # noqa: E402
                     default_device, device_name, load_kernel, print_profile, profile_call,
                     progress, rel_l2, transformers_kernel_mapping)

# Llama-3.1-8B's architecture; "tiny" for CPU smoke tests.
MODEL_SIZES = {
    "tiny": dict(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2),
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336,
               num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
               rope_theta=500000.0),
}
# Configurations without the kernels run first: kernels' kernelize replaces the forward of
# transformers' function layers (rotary_pos_emb) for their class, so a model built after a
# kernelized one would run this package's rope too (seen on the H200: "compile" ran
# ltx::rope_kernel). Each configuration is also checked for it (`--profile`).
# name -> (kernels, compile, fuse_decoder_residuals and fuse_gated_mlp, fuse_projections'
# keyword arguments or None); the last five only on request.
CONFIGS = {"eager": (False, False, False, None), "compile": (False, True, False, None),
           "kernels": (True, False, True, None), "kernels+compile": (True, True, True, None),
           "kernels+compile-unfused": (True, True, False, None),
           "kernels+proj": (True, False, True, {}),
           "kernels+compile+proj": (True, True, True, {}),
           "kernels+qkv": (True, False, True, {"mlp": False}),
           "kernels+compile+qkv": (True, True, True, {"mlp": False})}
DEFAULT_CONFIGS = ["eager", "compile", "kernels", "kernels+compile"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--model-size", choices=list(MODEL_SIZES), default="8b")
    p.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                   help=f"comma-separated, from {', '.join(CONFIGS)} (default: "
                        f"{', '.join(DEFAULT_CONFIGS)})")
    p.add_argument("--fuse", action=argparse.BooleanOptionalAction, default=True,
                   help="the kernels configurations with integrations.fuse_decoder_residuals "
                        "and fuse_gated_mlp (default: yes)")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--seq-len", type=int, default=4096, help="prompt tokens per sequence")
    p.add_argument("--iterations", type=int, default=10, help="timed forwards (per round)")
    p.add_argument("--rounds", type=int, default=1,
                   help="time the configurations in this many alternating rounds, all built "
                        "first (see below)")
    p.add_argument("--warmup-iterations", type=int, default=3)
    p.add_argument("--device", default=default_device())
    p.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", default=",".join(TRANSFORMERS_LAYERS),
                   help="hub layers mapped to this package's without torch.compile")
    p.add_argument("--compile-layers", default="rotary_pos_emb",
                   help="hub layers mapped to this package's under torch.compile")
    p.add_argument("--compile-scope", choices=["layers", "model"], default="layers",
                   help="what torch.compile compiles: each decoder layer (default) or the "
                        "whole forward")
    p.add_argument("--profile", action="store_true",
                   help="profiler breakdown of one forward (per configuration)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the fp32 reference forward (and the agreement check)")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown:
        p.error(f"unknown configs {unknown}; choose from {list(CONFIGS)}")
    args.configs.sort(key=list(CONFIGS).index)  # the unkernelized ones first (see CONFIGS)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    for name in ("layers", "compile_layers"):
        layers = [x.strip() for x in getattr(args, name).split(",") if x.strip()]
        bad = [x for x in layers if x not in TRANSFORMERS_LAYERS]
        if bad:
            p.error(f"--{name.replace('_', '-')}: unknown layers {bad}; choose from "
                    f"{list(TRANSFORMERS_LAYERS)}")
        setattr(args, name, layers)
    return args


def build(args, dtype, weights_dtype=None):
    """The model in `dtype`; with `weights_dtype`, its weights rounded through that dtype first
    (the fp32 reference of a bf16 run computes with the bf16 run's weights)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(max_position_embeddings=max(8192, args.seq_len),
                      **MODEL_SIZES[args.model_size])
    torch.manual_seed(args.seed)
    with torch.device(args.device):
        model = LlamaForCausalLM(cfg)
    if weights_dtype is not None:
        model = model.to(weights_dtype)
    return model.to(dtype).eval().requires_grad_(False)


def input_ids(args, vocab_size):
    g = torch.Generator().manual_seed(args.seed + 1)
    ids = torch.randint(0, vocab_size, (args.batch_size, args.seq_len), generator=g)
    return ids.to(args.device)


def reference_logits(args, dtype):
    """Last-position logits of an fp32 forward with the run's (rounded) weights, on the CPU."""
    model = build(args, torch.float32, weights_dtype=dtype)
    with torch.no_grad():
        logits = model(input_ids=input_ids(args, model.config.vocab_size), use_cache=False,
                       logits_to_keep=1).logits.float().cpu()
    del model
    gc.collect()
    if torch.device(args.device).type == "cuda":
        torch.cuda.empty_cache()
    return logits


def prepare(args, config, dtype):
    from kernels import Mode, kernelize, use_kernel_mapping

    use_kernels, use_compile, fuse, proj = CONFIGS[config]
    model = build(args, dtype)
    if proj is not None:
        load_kernel(args.device).integrations.fuse_projections(model, **proj)
    if use_kernels and fuse and args.fuse:
        integrations = load_kernel(args.device).integrations
        integrations.fuse_decoder_residuals(model)
        integrations.fuse_gated_mlp(model)
    if use_kernels:
        kernel = load_kernel(args.device)
        mode = Mode.INFERENCE | Mode.TORCH_COMPILE if use_compile else Mode.INFERENCE
        device_type = torch.device(args.device).type
        layers = args.compile_layers if use_compile else args.layers
        mapping = transformers_kernel_mapping(kernel, device_type, mode, layers)
        with use_kernel_mapping(mapping, inherit_mapping=False):
            # Layers left out of the mapping keep their own forward (use_fallback); with all
            # mapped, a layer that finds no kernel is an error.
            kernelize(model, mode=mode, device=device_type,
                      use_fallback=set(layers) != set(TRANSFORMERS_LAYERS))
    if use_compile and args.compile_scope == "model":
        model.forward = torch.compile(model.forward, fullgraph=True)
    elif use_compile:
        for layer in model.model.layers:
            layer.compile(fullgraph=True)
    return model


def rope_function():
    """transformers' LLaMA rope function layer: one object for the whole process, on which
    kernelize sets `forward` (None before transformers has one)."""
    from transformers.models.llama import modeling_llama

    fn = modeling_llama.apply_rotary_pos_emb
    return fn if isinstance(fn, torch.nn.Module) else None


def rope_state():
    fn = rope_function()
    return None if fn is None else fn.__dict__.get("forward")


def set_rope_state(state):
    """Puts back the rope function's `forward` as a configuration saw it when it was built:
    kernelize's (state) or transformers' own (None)."""
    fn = rope_function()
    if fn is None:
        return
    if state is None:
        fn.__dict__.pop("forward", None)
    else:
        fn.__dict__["forward"] = state


class Run:
    """One configuration: its model, its input, the rope state it was built with, and what its
    timed forwards measured."""

    def __init__(self, args, config, dtype):
        self.config = config
        self.model = prepare(args, config, dtype)
        # what fuse_projections left: the matrix products a forward runs (lm_head included)
        self.linears = sum(isinstance(m, torch.nn.Linear) for m in self.model.modules())
        self.rope = rope_state()
        self.ids = input_ids(args, self.model.config.vocab_size)
        self.times: list[float] = []
        self.round_medians: list[float] = []
        self.gpu_states: list = []
        self.warmup_s = 0.0
        self.logits = None

    def forward(self):
        return self.model(input_ids=self.ids, use_cache=False, logits_to_keep=1).logits

    def warm(self, args):
        set_rope_state(self.rope)
        with torch.no_grad(), Timer(args.device) as warm:
            for _ in progress(range(args.warmup_iterations), f"{self.config} warmup", args):
                self.forward()
        self.warmup_s += warm.seconds

    def time(self, args, desc):
        set_rope_state(self.rope)
        times = []
        with torch.no_grad(), GpuMonitor(args.device) as gpu:
            for _ in progress(range(args.iterations), desc, args):
                with Timer(args.device) as t:
                    self.logits = self.forward()
                times.append(1000 * t.seconds)
        self.times += times
        self.round_medians.append(statistics.median(times))
        self.gpu_states.append(gpu.summary)

    def finish(self, args):
        set_rope_state(self.rope)
        with torch.no_grad():
            breakdown = profile_call(self.forward, args.device) if args.profile else None
        if (breakdown is not None and not CONFIGS[self.config][0]
                and "ours" in breakdown["categories_ms"]):
            raise SystemExit(f"{self.config}: this package's kernels ran in a configuration "
                             f"without them (a kernelized class leaked into this model)")
        assert torch.isfinite(self.logits).all(), f"{self.config}: non-finite logits"
        med = statistics.median(self.times)
        result = {"config": self.config, "ms_median": med, "ms_mean": statistics.fmean(self.times),
                  "ms_min": min(self.times), "linears": self.linears,
                  "tokens_per_s": args.batch_size * args.seq_len / med * 1000,
                  "warmup_s": self.warmup_s, "ms": self.times, "profile": breakdown,
                  "gpu_state": self.gpu_states[-1], "_logits": self.logits.float().cpu()}
        if args.rounds > 1:
            result["round_medians_ms"] = self.round_medians
            result["gpu_states"] = self.gpu_states
        return result

    def release(self, args):
        del self.model
        gc.collect()
        if torch.device(args.device).type == "cuda":
            torch.cuda.empty_cache()


def run_config(args, config, dtype):
    """One configuration built, warmed, timed and released (--rounds 1)."""
    run = Run(args, config, dtype)
    run.warm(args)
    run.time(args, config)
    result = run.finish(args)
    run.release(args)
    torch._dynamo.reset()
    return result


def run_rounds(args, dtype):
    """Every configuration built and warmed, in CONFIGS order (the unkernelized ones before any
    kernelize), then timed in args.rounds alternating rounds."""
    runs = []
    for config in args.configs:
        runs.append(Run(args, config, dtype))
        runs[-1].warm(args)
    for r in range(args.rounds):
        for run in (runs if r % 2 == 0 else runs[::-1]):
            run.time(args, f"{run.config} round {r + 1}/{args.rounds}")
        print(f"  round {r + 1}/{args.rounds}: " + ", ".join(
            f"{run.config} {run.round_medians[-1]:.2f}" for run in runs) + " ms (median)")
    results = [run.finish(args) for run in runs]
    set_rope_state(None)
    for run in runs:
        run.release(args)
    torch._dynamo.reset()
    return results


def check_agreement(results, ref, args):
    """Each configuration's last-position logits against the fp32 reference (relative L2
    error). Random weights in bf16 through 32 layers put eager itself a few percent away; a
    configuration may differ from eager in how it rounds, not in what it computes, so none may
    be further than twice eager's distance (or 1e-4 in fp32, 1e-2 otherwise, if more)."""
    logits = {r["config"]: r.pop("_logits") for r in results}
    if ref is None:
        return
    errs = {c: rel_l2(l, ref) for c, l in logits.items()}
    floor = 1e-4 if args.dtype == "fp32" else 1e-2
    limit = max(2 * errs["eager"], floor) if "eager" in errs else floor
    print(f"  last-position logits against the fp32 reference (relative L2; limit {limit:.2e}):")
    for r in results:
        r["rel_err_vs_fp32"] = errs[r["config"]]
        print(f"    {r['config']:23s} {errs[r['config']]:.2e}")
    bad = {c: e for c, e in errs.items() if e > limit}
    if bad:
        raise SystemExit(f"logits too far from the fp32 reference: {bad} (limit {limit:.2e})")


def pinned_version(name: str, requirements: Path = ROOT / "requirements.txt") -> str | None:
    """The version `requirements` pins for package `name` (`name==X`), or None."""
    if not requirements.is_file():
        return None
    for line in requirements.read_text().splitlines():
        pkg, sep, ver = line.split("#")[0].strip().partition("==")
        if sep and pkg.strip().lower() == name.lower():
            return ver.strip()
    return None


def version_warning(name: str, have: str, pinned: str | None) -> str | None:
    """A warning when the installed `name` is not the version this project pins: transformers'
    hub-kernel hooks differ between versions, and a version without the one kernelize maps
    (e.g. `rotary_pos_emb`) runs the model's own code there without an error (run EE: the
    H200's own transformers, not 5.22.2, kept torch's rotary embedding in the kernels
    configuration, 107-109 ms a forward against 99-101 with 5.22.2)."""
    if pinned is None or have == pinned:
        return None
    return (f"warning: {name} {have} is not the version this project pins ({pinned}, "
            f"requirements.txt): the kernels configurations may run fewer of this package's "
            f"kernels than they would with it")


def main(argv=None):
    import transformers

    args = parse_args(argv)
    dtype = DTYPES[args.dtype]
    header = {"model_size": args.model_size, "device": device_name(args.device),
              "dtype": args.dtype, "batch_size": args.batch_size, "seq_len": args.seq_len,
              "torch": torch.__version__, "transformers": transformers.__version__,
              "compile_scope": args.compile_scope, "rounds": args.rounds, "fuse": args.fuse}
    print(f"LLaMA {args.model_size} forward on {header['device']}, {args.dtype}, "
          f"batch {args.batch_size} x {args.seq_len} tokens, {args.iterations} iterations "
          f"after {args.warmup_iterations} warmup"
          + (f", in {args.rounds} alternating rounds" if args.rounds > 1 else "")
          + f"; compile scope: {args.compile_scope}; torch {torch.__version__}, "
          f"transformers {transformers.__version__}")
    warning = version_warning("transformers", transformers.__version__,
                              pinned_version("transformers"))
    if warning:
        print(warning)
    ref = None if args.no_reference else reference_logits(args, dtype)

    def report(r):
        print(f"  {r['config']:23s} {r['ms_median']:9.2f} ms (median; min {r['ms_min']:.2f})  "
              f"{r['tokens_per_s']:10.0f} tokens/s  warmup {r['warmup_s']:.1f} s")
        if r["gpu_state"]:
            print(f"    {GpuMonitor.describe(r['gpu_state'])}")
        if r["profile"]:
            print_profile(r["config"], r["profile"], "one forward")

    results = []
    if args.rounds > 1:
        results = run_rounds(args, dtype)
        for r in results:
            report(r)
    else:
        for config in args.configs:
            results.append(run_config(args, config, dtype))
            report(results[-1])
    check_agreement(results, ref, args)
    base = {r["config"]: r["ms_median"] for r in results}
    if "eager" in base:
        for r in results:
            r["speedup_vs_eager"] = base["eager"] / r["ms_median"]
        print("  speedup against eager: " + ", ".join(
            f"{r['config']} {r['speedup_vs_eager']:.3f}x" for r in results))
    for config in ("kernels+compile", "kernels+compile-unfused"):
        if "compile" not in base or config not in base:
            continue
        print(f"  {config} against compile: {base['compile'] / base[config]:.3f}x")
        if args.rounds > 1:
            by = {r["config"]: r["round_medians_ms"] for r in results}
            per_round = [c / kc for c, kc in zip(by["compile"], by[config])]
            print("    per round: " + ", ".join(f"{x:.3f}x" for x in per_round))
    if args.json:
        args.json.write_text(json.dumps({**header, "results": results}, indent=2))
        print(f"  wrote {args.json}")
    return results


if __name__ == "__main__":
    main()
