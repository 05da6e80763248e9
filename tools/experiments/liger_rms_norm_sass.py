#!/usr/bin/env python3
"""Liger-Kernel's RMSNorm forward kernel compiled for sm_90 without a GPU (Triton's ahead-of-time
compile, the specializations Liger's launch gets for bf16 rows of D: 16-byte-aligned pointers and
strides, `llama` casting, one program a row of D / 8 / 32 warps), written as cubin and PTX for
reading its SASS beside ours (run AA, change 77):

    python tools/experiments/liger_rms_norm_sass.py 2048 --out /tmp/sass
    <triton>/backends/nvidia/bin/cuobjdump -sass /tmp/sass/liger_2048.cubin
    python tools/resources.py ltx_kernels_cuda/rms_norm.cu --cap 9.0 --sass

Needs triton and liger_kernel (the device's versions: Triton 3.6, Liger 0.8.5).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import triton
from liger_kernel.ops.rms_norm import _CASTING_MODE_LLAMA, _rms_norm_forward_kernel
from liger_kernel.ops.utils import calculate_settings
from triton.backends.compiler import GPUTarget


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("d", type=int, help="row length (bf16)")
    ap.add_argument("--out", type=Path, default=Path("."))
    args = ap.parse_args()
    block, warps = calculate_settings(args.d)
    sig = {"Y_ptr": "*bf16", "Y_row_stride": "i32", "X_ptr": "*bf16", "X_row_stride": "i32",
           "W_ptr": "*bf16", "W_row_stride": "i32", "RSTD_ptr": "*fp32",
           "RSTD_row_stride": "i32", "n_cols": "i32", "eps": "fp32", "offset": "fp32",
           "casting_mode": "constexpr", "elementwise_affine": "constexpr",
           "BLOCK_SIZE": "constexpr"}
    names = list(sig)
    aligned = ("Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "RSTD_ptr", "n_cols")
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    mode = getattr(_CASTING_MODE_LLAMA, "value", _CASTING_MODE_LLAMA)
    src = triton.compiler.ASTSource(
        fn=_rms_norm_forward_kernel, signature=sig, attrs=attrs,
        constexprs={"casting_mode": mode, "elementwise_affine": True, "BLOCK_SIZE": block})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"liger_{args.d}.cubin").write_bytes(k.asm["cubin"])
    (args.out / f"liger_{args.d}.ptx").write_text(k.asm["ptx"])
    print(f"wrote {args.out}/liger_{args.d}.cubin and .ptx ({warps} warps, block {block})")


if __name__ == "__main__":
    main()
