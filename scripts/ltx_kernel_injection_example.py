#!/usr/bin/env python3
"""Minimal diffusers integration: build an LTX-Video transformer from its config (random
weights, no download), inject this package's kernels, run one forward, and compare with the
same model without them.

    python scripts/ltx_kernel_injection_example.py                    # tiny model, CPU, fp32
    python scripts/ltx_kernel_injection_example.py --model-size 2b --device cuda --dtype bf16

With a real checkpoint the same two lines apply to the pipeline, before offloading:

    pipe = LTXPipeline.from_pretrained("Lightricks/LTX-Video", torch_dtype=torch.bfloat16)
    get_kernel("<repo-id>", version=1).integrations.inject_ltx_video(pipe.transformer)
    pipe.enable_model_cpu_offload()            # or pipe.to("cuda"); torch.compile after
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DTYPES, default_device, load_kernel, rel_l2  # noqa: E402
from benchmark_example import LATENT_CHANNELS, MODEL_SIZES  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--model-size", choices=list(MODEL_SIZES), default="tiny")
    p.add_argument("--device", default=default_device())
    p.add_argument("--dtype", choices=list(DTYPES), default="fp32")
    p.add_argument("--latent", type=int, nargs=3, default=[2, 4, 6], metavar=("F", "H", "W"),
                   help="latent frames, height, width")
    p.add_argument("--per-token-timesteps", action="store_true",
                   help="a timestep per token (image-to-video conditioning)")
    args = p.parse_args(argv)
    from diffusers import LTXVideoTransformer3DModel

    dtype = DTYPES[args.dtype]
    cfg = MODEL_SIZES[args.model_size]
    torch.manual_seed(0)
    with torch.device(args.device):
        model = LTXVideoTransformer3DModel(in_channels=LATENT_CHANNELS,
                                           out_channels=LATENT_CHANNELS, **cfg)
    model = model.to(dtype).eval()
    reference = copy.deepcopy(model)

    kernel = load_kernel(args.device)
    report = kernel.integrations.inject_ltx_video(model)
    print(report)

    f, h, w = args.latent
    tokens, batch = f * h * w, 2
    x = torch.randn(batch, tokens, LATENT_CHANNELS, device=args.device, dtype=dtype)
    text = torch.randn(batch, 16, cfg["caption_channels"], device=args.device, dtype=dtype)
    mask = torch.ones(batch, 16, device=args.device)
    shape = (batch, tokens) if args.per_token_timesteps else (batch,)
    t = torch.rand(shape, device=args.device) * 1000
    kw = dict(num_frames=f, height=h, width=w, rope_interpolation_scale=(8 / 25, 32, 32),
              return_dict=False)
    with torch.no_grad():
        out = model(x, text, t, mask, **kw)[0]
        ref = reference(x, text, t, mask, **kw)[0]
    diff = (out.float() - ref.float()).abs().max().item()
    rel = rel_l2(out, ref)
    print(f"output {tuple(out.shape)} {out.dtype} on {out.device}: max |diff| vs uninjected "
          f"{diff:.3e}, relative {rel:.3e}")
    return diff, rel


if __name__ == "__main__":
    main()
