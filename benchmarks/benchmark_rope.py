"""`kernels benchmark .` workloads for rope_qk (LLaMA layout, split halves), rms_norm_rope
(LTX-Video norm_q + interleaved rope with fp32 cos/sin) and rms_norm_rope_qk (LTX-Video q and k
in one call; the k output is verified), the last also with one sample's pair tables (`[1, S, D/2]`,
`pair_tables=True`, as the LTX injection passes them)."""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import DTYPES, Workload, benchmark_class, randn  # noqa: E402


def llama_inputs(dev, dt):
    B, H, S, D = 1, 32, 4096, 128
    ang = torch.rand(B, S, D // 2, device=dev) * 6.28
    emb = torch.cat((ang, ang), -1)
    return {"q": randn((B, H, S, D), DTYPES[dt], dev), "k": randn((B, H, S, D), DTYPES[dt], dev),
            "cos": emb.cos().to(DTYPES[dt]).unsqueeze(1), "sin": emb.sin().to(DTYPES[dt]).unsqueeze(1)}


def rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat((-b, a), -1)


def ltx_inputs(dev, dt):
    B, S, D = 2, 2688, 2048
    ang = torch.rand(B, S, D // 2, device=dev) * 6.28
    return {"x": randn((B, S, D), DTYPES[dt], dev), "w": randn(D, DTYPES[dt], dev, 0.05) + 0.25,
            "cos": ang.cos().repeat_interleave(2, -1), "sin": ang.sin().repeat_interleave(2, -1)}


def ltx_ref(i):
    x = F.rms_norm(i["x"].float(), (i["x"].shape[-1],), i["w"].float(), 1e-5)
    re, im = x.unflatten(2, (-1, 2)).unbind(-1)
    rot = torch.stack([-im, re], -1).flatten(2)
    return (x * i["cos"] + rot * i["sin"]).to(i["x"].dtype)


def ltx_qk_inputs(dev, dt):
    i = ltx_inputs(dev, dt)
    D = i["w"].shape[0]
    return {**i, "y": randn(i["x"].shape, DTYPES[dt], dev),
            "w2": randn(D, DTYPES[dt], dev, 0.05) + 0.25}


def ltx_pair_inputs(dev, dt):
    """ltx_qk_inputs with the tables of one sample (both samples rotated alike) as pair tables
    (`cos_p`, `sin_p`); `cos` / `sin` are their full tables, expanded, for the reference."""
    i = ltx_qk_inputs(dev, dt)
    cp, sp = i["cos"][:1, :, 0::2].contiguous(), i["sin"][:1, :, 0::2].contiguous()
    B = i["x"].shape[0]
    return {**i, "cos_p": cp, "sin_p": sp,
            "cos": cp.repeat_interleave(2, -1).expand(B, -1, -1),
            "sin": sp.repeat_interleave(2, -1).expand(B, -1, -1)}


WORKLOADS = []
for dt in DTYPES:
    WORKLOADS += [
        Workload(f"rope_qk_1x32x4096x128_{dt}", lambda dev, d=dt: llama_inputs(dev, d),
                 lambda k, i: k.rope_qk(i["q"], i["k"], i["cos"], i["sin"], interleaved=False)[0],
                 lambda i: (i["q"].float() * i["cos"].float()
                            + rotate_half(i["q"].float()) * i["sin"].float()).to(i["q"].dtype)),
        Workload(f"rms_norm_rope_ltx_2x2688x2048_{dt}", lambda dev, d=dt: ltx_inputs(dev, d),
                 lambda k, i: k.rms_norm_rope(i["x"], i["w"], i["cos"], i["sin"], 1e-5,
                                              interleaved=True),
                 ltx_ref),
        Workload(f"rms_norm_rope_qk_ltx_2x2688x2048_{dt}", lambda dev, d=dt: ltx_qk_inputs(dev, d),
                 lambda k, i: k.rms_norm_rope_qk(i["x"], i["y"], i["w"], i["w2"], i["cos"],
                                                 i["sin"], 1e-5, interleaved=True)[1],
                 lambda i: ltx_ref({**i, "x": i["y"], "w": i["w2"]})),
        Workload(f"rms_norm_rope_qk_ltx_pairs_2x2688x2048_{dt}",
                 lambda dev, d=dt: ltx_pair_inputs(dev, d),
                 lambda k, i: k.rms_norm_rope_qk(i["x"], i["y"], i["w"], i["w2"], i["cos_p"],
                                                 i["sin_p"], 1e-5, interleaved=True,
                                                 pair_tables=True)[1],
                 lambda i: ltx_ref({**i, "x": i["y"], "w": i["w2"]})),
    ]

RopeBenchmark = benchmark_class("RopeBenchmark", WORKLOADS)
