"""Run J debug: which staged AdaLN calls crash the process (rows, gated)."""
import faulthandler
import os
import sys

import torch

faulthandler.enable()
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tools.sanitize_ops import load  # noqa: E402

k = load()
for S in (8, 64, 256, 1024, 4096):
    for gated in (False, True):
        x = torch.randn(1, S, 2048, device="cuda", dtype=torch.bfloat16)
        sc = 0.1 * torch.randn(1, 1, 2048, device="cuda", dtype=torch.bfloat16)
        print("S", S, "gated", gated, flush=True)
        if gated:
            k.gated_residual_adaln(x, torch.randn_like(x), sc, sc, sc)
        else:
            k.adaln(x, sc, sc, norm="rms", eps=1e-6)
        torch.cuda.synchronize()
        print("  ok", flush=True)
