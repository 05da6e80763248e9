#!/usr/bin/env python3
"""End-to-end transformers benchmark: a LLaMA-8B-sized model (random weights, no download),
one forward (prefill) over a batch of prompts, in four configurations: eager, kernels (this
package's layers through `kernels.kernelize`: RMSNorm, rotary_pos_emb, SiLU), compile
(`torch.compile`), kernels+compile.

    python scripts/benchmark_transformers.py --batch-size 1 --seq-len 4096 --json llama.json
    python scripts/benchmark_transformers.py --model-size tiny --device cpu --dtype fp32 \\
        --seq-len 32 --iterations 2 --warmup-iterations 1          # smoke test

Only the last position's logits are computed (`logits_to_keep=1`), as generation's prefill
does, so the 128k-vocabulary head does not dominate.
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
from _common import (DTYPES, Timer, default_device, device_name, load_kernel,  # noqa: E402
                     transformers_kernel_mapping)

# Llama-3.1-8B's architecture; "tiny" for CPU smoke tests.
MODEL_SIZES = {
    "tiny": dict(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2),
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336,
               num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
               rope_theta=500000.0),
}
CONFIGS = {"eager": (False, False), "kernels": (True, False), "compile": (False, True),
           "kernels+compile": (True, True)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--model-size", choices=list(MODEL_SIZES), default="8b")
    p.add_argument("--configs", default=",".join(CONFIGS),
                   help=f"comma-separated, from {', '.join(CONFIGS)} (default: all)")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--seq-len", type=int, default=4096, help="prompt tokens per sequence")
    p.add_argument("--iterations", type=int, default=10, help="timed forwards")
    p.add_argument("--warmup-iterations", type=int, default=3)
    p.add_argument("--device", default=default_device())
    p.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown:
        p.error(f"unknown configs {unknown}; choose from {list(CONFIGS)}")
    return args


def build(args, dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(max_position_embeddings=max(8192, args.seq_len),
                      **MODEL_SIZES[args.model_size])
    torch.manual_seed(args.seed)
    with torch.device(args.device):
        model = LlamaForCausalLM(cfg)
    return model.to(dtype).eval().requires_grad_(False)


def prepare(args, config, dtype):
    from kernels import Mode, kernelize, use_kernel_mapping

    use_kernels, use_compile = CONFIGS[config]
    model = build(args, dtype)
    if use_kernels:
        kernel = load_kernel(args.device)
        mode = Mode.INFERENCE | Mode.TORCH_COMPILE if use_compile else Mode.INFERENCE
        device_type = torch.device(args.device).type
        with use_kernel_mapping(transformers_kernel_mapping(kernel, device_type, mode),
                                inherit_mapping=False):
            kernelize(model, mode=mode, device=device_type, use_fallback=False)
    if use_compile:
        model.forward = torch.compile(model.forward, fullgraph=True)
    return model


def run_config(args, config, dtype):
    model = prepare(args, config, dtype)
    g = torch.Generator().manual_seed(args.seed + 1)
    ids = torch.randint(0, model.config.vocab_size, (args.batch_size, args.seq_len),
                        generator=g).to(args.device)

    def forward():
        return model(input_ids=ids, use_cache=False, logits_to_keep=1).logits

    bar = (lambda it, desc: it) if args.no_progress else _tqdm
    with torch.no_grad():
        with Timer(args.device) as warm:
            for _ in bar(range(args.warmup_iterations), f"{config} warmup"):
                forward()
        times = []
        for _ in bar(range(args.iterations), config):
            with Timer(args.device) as t:
                logits = forward()
            times.append(1000 * t.seconds)
    assert torch.isfinite(logits).all(), f"{config}: non-finite logits"
    med = statistics.median(times)
    result = {"config": config, "ms_median": med, "ms_mean": statistics.fmean(times),
              "ms_min": min(times), "tokens_per_s": args.batch_size * args.seq_len / med * 1000,
              "warmup_s": warm.seconds, "ms": times, "_logits": logits.float().cpu()}
    del model
    gc.collect()
    if torch.device(args.device).type == "cuda":
        torch.cuda.empty_cache()
    torch._dynamo.reset()
    return result


def _tqdm(it, desc):
    from tqdm import tqdm

    return tqdm(it, desc=desc, leave=False, file=sys.stderr)


def check_agreement(results, args):
    """Each configuration's last-position logits against eager's (relative L2 error): a fast
    configuration that computes something else must not pass unnoticed."""
    logits = {r["config"]: r.pop("_logits") for r in results}
    ref = logits.get("eager")
    if ref is None:
        return
    limit = 1e-4 if args.dtype == "fp32" else 5e-2
    for r in results:
        err = ((logits[r["config"]] - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        r["rel_err_vs_eager"] = err
        print(f"  {r['config']:16s} logits vs eager: relative L2 error {err:.2e}")
        if err > limit:
            raise SystemExit(f"{r['config']}: logits differ from eager by {err:.2e} "
                             f"(limit {limit:.0e} for {args.dtype})")


def main(argv=None):
    args = parse_args(argv)
    dtype = DTYPES[args.dtype]
    header = {"model_size": args.model_size, "device": device_name(args.device),
              "dtype": args.dtype, "batch_size": args.batch_size, "seq_len": args.seq_len,
              "torch": torch.__version__}
    print(f"LLaMA {args.model_size} forward on {header['device']}, {args.dtype}, "
          f"batch {args.batch_size} x {args.seq_len} tokens, {args.iterations} iterations "
          f"after {args.warmup_iterations} warmup")
    results = []
    for config in args.configs:
        r = run_config(args, config, dtype)
        results.append(r)
        print(f"  {config:16s} {r['ms_median']:9.2f} ms (median; min {r['ms_min']:.2f})  "
              f"{r['tokens_per_s']:10.0f} tokens/s  warmup {r['warmup_s']:.1f} s")
    check_agreement(results, args)
    base = {r["config"]: r["ms_median"] for r in results}
    if "eager" in base:
        for r in results:
            r["speedup_vs_eager"] = base["eager"] / r["ms_median"]
        print("  speedup against eager: " + ", ".join(
            f"{r['config']} {r['speedup_vs_eager']:.3f}x" for r in results))
    if "compile" in base and "kernels+compile" in base:
        print(f"  kernels+compile against compile: "
              f"{base['compile'] / base['kernels+compile']:.3f}x")
    if args.json:
        args.json.write_text(json.dumps({**header, "results": results}, indent=2))
        print(f"  wrote {args.json}")
    return results


if __name__ == "__main__":
    main()
