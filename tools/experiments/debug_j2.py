"""Run J, call 2 (debug): the staged AdaLN kernels failed their tests in call 1 (62 of the
AdaLN CUDA tests; compute-sanitizer's run raised in the application). Small cases, each
printing the exception or where the result differs from the float64 reference."""
import os
import sys
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tools.sanitize_ops import load  # noqa: E402


def ref(x, scale, shift, norm):
    xd = x.double()
    if norm == "layer":
        xd = xd - xd.mean(-1, keepdim=True)
    n = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6)
    return n * (1 + scale.double()) + shift.double()


k = load()
torch.manual_seed(0)
for (B, S, D, mk, dt, norm) in [(2, 8, 2048, "sample", torch.bfloat16, "rms"),
                                (1, 8, 2048, "D", torch.bfloat16, "rms"),
                                (2, 3, 776, "sample", torch.float32, "rms"),
                                (2, 3, 776, "token", torch.float32, "rms"),
                                (2, 8, 2048, "sample", torch.bfloat16, "layer")]:
    x = torch.randn(B, S, D, device="cuda", dtype=dt)
    ms = (D,) if mk == "D" else (B, 1, D) if mk == "sample" else (B, S, D)
    scale = (0.5 * torch.randn(ms, device="cuda")).to(dt)
    shift = (0.5 * torch.randn(ms, device="cuda")).to(dt)
    try:
        out = k.adaln(x, scale, shift, norm=norm)
        torch.cuda.synchronize()
        r = ref(x, scale, shift, norm)
        err = (out.double() - r).abs()
        bad = err > 0.05 + 0.02 * r.abs()
        rows = bad.reshape(-1, D).any(-1).nonzero().flatten().tolist()
        cols = bad.reshape(-1, D).any(0).nonzero().flatten().tolist()
        print(f"{(B, S, D, mk, dt, norm)}: max err {err.max().item():.3g}, nan "
              f"{out.isnan().sum().item()}, bad rows {rows[:12]} ({len(rows)}), bad cols "
              f"{cols[:12]} ({len(cols)})")
        if rows:
            r0 = rows[0]
            print("   out", out.reshape(-1, D)[r0, :8].tolist())
            print("   ref", r.reshape(-1, D)[r0, :8].tolist())
    except Exception:
        traceback.print_exc()
        break
