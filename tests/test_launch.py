"""The ops back to back, as a model runs them: chains where each op reads what the one before
wrote (read after write), writes a buffer the one before reads (write after read) or works in
place, on tensors of several waves of blocks, eagerly and captured as one CUDA graph (as
torch.compile's CUDA graphs and the benchmarks run them). Every output is compared bit for bit
with the same chain run with the device synchronized after each op. Written for run S's
programmatic dependent launch (kernels whose blocks may start before the previous kernel
ends; measured no faster end to end and reverted: PERFORMANCE.md, change 48), kept for any
change to how the kernels are launched. CUDA only.
"""

from __future__ import annotations

import pytest
import torch

from conftest import HAS_CUDA, load_kernel

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

B, T, D = 2, 4096, 2048  # 32 MiB a bf16 tensor: several waves of every kernel below


def _inputs(dtype=torch.bfloat16) -> dict[str, torch.Tensor]:
    g = torch.Generator(device="cuda").manual_seed(0)

    def r(*shape, dt=dtype, scale=1.0):
        return torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32).mul(
            scale).to(dt)

    return {
        "x": r(B, T, D), "u": r(B, T, D), "w": r(D, scale=0.1).add(1),
        "wq": r(D, scale=0.1).add(1), "wk": r(D, scale=0.1).add(1),
        "gate": r(B, 1, D, scale=0.5), "scale": r(B, 1, D, scale=0.1),
        "shift": r(B, 1, D, scale=0.1),
        "cos": r(1, T, D, dt=torch.float32).cos(), "sin": r(1, T, D, dt=torch.float32).sin(),
    }


def _chain(k, t: dict[str, torch.Tensor], sync: bool) -> list[torch.Tensor]:
    """The ops back to back; `sync`: the device synchronized after each (the reference)."""
    outs = []

    def step(value):
        if sync:
            torch.cuda.synchronize()
        return value

    y = step(k.rms_norm(t["x"], t["w"]))
    z = step(k.gelu_tanh(y))  # reads y as rms_norm writes it
    outs.append(z)
    step(k.gelu_tanh(t["u"], out=y))  # overwrites y, which the gelu_tanh before reads
    h, r = k.gated_residual_adaln(z, y, t["gate"], t["scale"], t["shift"])
    step(h)
    q, kk = step(k.rms_norm_rope_qk(h, r, t["wq"], t["wk"], t["cos"], t["sin"], 1e-6,
                                    interleaved=True))
    outs += [h, r]
    step(k.fused_add_rms_norm(q, kk, t["w"]))  # in place: q and kk, written as read
    v = step(k.gated_residual(q, kk, t["gate"]))
    o = step(k.adaln(v, t["scale"], t["shift"]))
    a = step(k.silu_and_mul(torch.cat([o, v], dim=-1)))
    outs += [q, kk, v, o, a]
    return outs


def _check(got: list[torch.Tensor], want: list[torch.Tensor], what: str) -> None:
    names = ["z", "h", "r", "q", "k", "v", "o", "a"]
    for name, g, w in zip(names, got, want):
        assert torch.equal(g, w), (
            f"{what}: {name} differs from the serialized chain "
            f"(max abs diff {(g.float() - w.float()).abs().max().item():.3e})")


def test_chain_eager_cuda_matches_serialized():
    k = load_kernel("cuda")
    t = _inputs()
    want = _chain(k, t, sync=True)
    for rep in range(3):
        got = _chain(k, t, sync=False)
        torch.cuda.synchronize()
        _check(got, want, f"eager, repetition {rep}")


def test_chain_cuda_graph_matches_serialized():
    k = load_kernel("cuda")
    t = _inputs()
    want = _chain(k, t, sync=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _chain(k, t, sync=False)  # warm up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = _chain(k, t, sync=False)
    for rep in range(3):
        for o in got:
            o.fill_(float("nan"))  # so that a replay that skipped a write is seen
        graph.replay()
        torch.cuda.synchronize()
        _check(got, want, f"CUDA graph, replay {rep}")
