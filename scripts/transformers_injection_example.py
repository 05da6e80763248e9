#!/usr/bin/env python3
"""Minimal transformers integration: a LLaMA model built from its config (random weights, no
download) with this package's layers attached by `kernels.kernelize`, checked against the
same model without them; then the same through `from_pretrained(..., use_kernels=True,
kernel_config=KernelConfig(...))`, and Falcon's undecorated LayerNorms through
`integrations.patch_falcon_layernorm`.

    python scripts/transformers_injection_example.py                 # CPU, fp32
    python scripts/transformers_injection_example.py --device cuda --dtype bf16

Versions: transformers 5.22.2 with kernels 0.17.2 (transformers >= 5.23 wants kernels >= 0.18.2
and otherwise ignores kernels). In 5.22, `from_pretrained(..., use_kernels=True,
kernel_config=KernelConfig(mapping, use_local_kernel=True))` accepts local builds
(`"/abs/path/to/build/<variant>:RMSNorm"`) but only for the device types cuda, rocm, xpu, npu,
neuron, tpu and mps: on the CPU it raises, and `kernels.kernelize` (below) is the way. It also
runs kernelize with fallback on: a layer that fails to load silently keeps its forward, so this
script counts the kernel calls.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (DTYPES, TRANSFORMERS_LAYERS, default_device, load_kernel,  # noqa: E402
                     rel_l2, transformers_kernel_mapping)


def count_kernel_calls(fn) -> dict:
    """Calls of this package's ops (any build namespace) while running fn."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return {e.key.split("::")[-1]: e.count for e in prof.key_averages()
            if e.key.startswith("_ltx_kernels_")}


def llama_config():
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


def with_kernelize(kernel, args, dtype, ids):
    from kernels import Mode, kernelize, use_kernel_mapping
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(llama_config()).to(args.device, dtype).eval()
    reference = copy.deepcopy(model)
    device_type = torch.device(args.device).type
    with use_kernel_mapping(transformers_kernel_mapping(kernel, device_type)):
        kernelize(model, mode=Mode.INFERENCE, device=device_type, use_fallback=False)
    with torch.no_grad():
        out, ref = model(ids).logits, reference(ids).logits
        calls = count_kernel_calls(lambda: model(ids))
    print(f"kernelize: logits relative difference {rel_l2(out, ref):.2e}; kernel calls per "
          f"forward {calls}")
    return model


def with_from_pretrained(kernel, args, dtype, ids):
    """`from_pretrained(..., use_kernels=True, kernel_config=...)` with this build as a local
    kernel. transformers 5.22.2 breaks on local kernels there: `from_pretrained` first rewrites
    the config's mapping to `(repo, metadata)` tuples (`register_kernel_replacements_and_fusions`)
    and then hands those to `add_to_mapping_local`, which calls `.split(":")` on them
    (AttributeError). The script says so and attaches a fresh config with
    `model.set_use_kernels(True, kernel_config)`, the call `from_pretrained` itself ends with,
    which takes the mapping as written. `device_map` (so that the model is on its device when
    the kernels are attached) needs accelerate; without it the model is loaded, moved, then
    attached the same way."""
    from transformers import KernelConfig, LlamaForCausalLM

    variant = Path(kernel.__file__).parent
    # Only names the model registers (LLaMA has no GeluTanh; KernelConfig rejects unknown names).
    mapping = {name: f"{variant}:{layer}" for name, layer in TRANSFORMERS_LAYERS.items()
               if name != "GeluTanh"}
    how = "from_pretrained(use_kernels=True, kernel_config=...)"
    with tempfile.TemporaryDirectory() as d:
        torch.manual_seed(0)
        LlamaForCausalLM(llama_config()).save_pretrained(d)
        try:
            model = None
            if importlib.util.find_spec("accelerate") is not None:
                try:
                    model = LlamaForCausalLM.from_pretrained(
                        d, dtype=dtype, device_map=args.device, use_kernels=True,
                        kernel_config=KernelConfig(mapping, use_local_kernel=True))
                except AttributeError as e:
                    if "'tuple' object has no attribute 'split'" not in str(e):
                        raise
                    print(f"{how}: this transformers version fails on a local kernel mapping "
                          f"({e}); attaching it with set_use_kernels instead")
                    model = LlamaForCausalLM.from_pretrained(d, dtype=dtype,
                                                             device_map=args.device)
            else:
                print(f"{how}: needs accelerate for device_map; loading, moving, then "
                      f"set_use_kernels")
                model = LlamaForCausalLM.from_pretrained(d, dtype=dtype).to(args.device)
            if not getattr(model, "kernel_config", None):
                how = "set_use_kernels(True, kernel_config)"
                model.set_use_kernels(True, KernelConfig(mapping, use_local_kernel=True))
        except ValueError as e:
            print(f"{how}: not supported on {args.device} by this transformers version ({e})")
            return None
    with torch.no_grad():
        calls = count_kernel_calls(lambda: model(ids))
    print(f"{how}: kernel calls per forward {calls}")
    return model


def falcon(kernel, args, dtype, ids):
    from transformers import FalconConfig, FalconForCausalLM

    torch.manual_seed(0)
    cfg = FalconConfig(vocab_size=512, hidden_size=256, num_hidden_layers=2,
                       num_attention_heads=4, new_decoder_architecture=True, num_kv_heads=2)
    model = FalconForCausalLM(cfg).to(args.device, dtype).eval()
    reference = copy.deepcopy(model)
    n = kernel.integrations.patch_falcon_layernorm(model)
    with torch.no_grad():
        out, ref = model(ids).logits, reference(ids).logits
        calls = count_kernel_calls(lambda: model(ids))
    print(f"Falcon: {n} LayerNorms patched; logits relative difference {rel_l2(out, ref):.2e}; "
          f"kernel calls per forward {calls}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--device", default=default_device())
    p.add_argument("--dtype", choices=list(DTYPES), default="fp32")
    args = p.parse_args(argv)
    dtype = DTYPES[args.dtype]
    kernel = load_kernel(args.device)
    ids = torch.randint(0, 512, (2, 16), device=args.device)
    with_kernelize(kernel, args, dtype, ids)
    with_from_pretrained(kernel, args, dtype, ids)
    falcon(kernel, args, dtype, ids)


if __name__ == "__main__":
    main()
