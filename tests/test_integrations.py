"""Whole diffusers transformers with the kernels injected (`ltx_kernels.integrations`): small
configs with random weights (no download) give the model's output, the kernels really run
(counted with the profiler), and the injected model compiles with `fullgraph=True`.

Models are built on the CPU, injected there, then moved to the test's device: the injection
must not capture a device (it is meant to run before `enable_model_cpu_offload()`).
"""

import copy
import types
import re

import pytest
import torch

from conftest import load_kernel

diffusers = pytest.importorskip("diffusers")

# Relative error of the output (||out - ref|| / ||ref||) against the same model in float64.
# fp32: the kernels and PyTorch differ only in fp32 summation order, ~1e-7 measured.
# bf16: eager PyTorch rounds to bf16 after every elementwise step (norm, each modulation
# step, rope), the kernels once per fused op; so the injected model's error must not exceed
# eager's own bf16 error by more than the run-to-run spread of such errors (x1.5; measured:
# the injected model's error is 0.85x eager's).
FP32_RTOL = 1e-5
BF16_VS_EAGER = 1.5


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double().cpu(), ref.double().cpu()
    return ((out - ref).norm() / ref.norm()).item()


def count_ops(fn, op_suffix: str) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.count for e in prof.key_averages() if e.key.endswith(op_suffix))


# ---- LTX-Video ---------------------------------------------------------------------------------

LTX_LAYERS = 2
LTX_F, LTX_H, LTX_W = 2, 3, 4  # latent frames, height, width: 24 tokens
LTX_TEXT = 5


def tiny_ltx(affine: bool = False):
    """2 layers, 2 heads x 32 (inner 64: 64 % 6 != 0, so rope has cos=1 / sin=0 padding),
    random weights, non-trivial q/k norm weights; fp32 on the CPU."""
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    model = LTXVideoTransformer3DModel(
        in_channels=8, out_channels=8, num_attention_heads=2, attention_head_dim=32,
        cross_attention_dim=64, num_layers=LTX_LAYERS, caption_channels=16,
        norm_elementwise_affine=affine,
    ).eval()
    for m in model.modules():
        if type(m).__name__ == "RMSNorm" and getattr(m, "weight", None) is not None:
            m.weight.data = 1 + 0.2 * torch.randn_like(m.weight)
    return model


def injected_tiny_ltx(kernel, backend):
    """tiny_ltx() with the kernels injected on the CPU, then moved to the test's device."""
    model = tiny_ltx()
    kernel.integrations.inject_ltx_video(model)
    return model.to(backend)


def injected_and_reference(backend):
    """`(injected, reference)`: tiny_ltx() with the kernels injected on the CPU, and an
    uninjected copy, both moved to the test's device."""
    model = tiny_ltx()
    ref = copy.deepcopy(model).to(backend)
    load_kernel(backend).integrations.inject_ltx_video(model)
    return model.to(backend), ref


def ltx_inputs(dtype, device, per_token: bool, batch: int = 2):
    """The transformer's forward arguments as the LTX pipeline passes them. Per-token timesteps
    (image-to-video conditioning) are `[B, S]`, making the modulation `[B, S, D]`."""
    S = LTX_F * LTX_H * LTX_W
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, S, 8, generator=g)
    enc = torch.randn(batch, LTX_TEXT, 16, generator=g)
    mask = torch.ones(batch, LTX_TEXT)
    mask[-1, 3:] = 0  # padded prompt tokens
    t = torch.rand(batch, S, generator=g) if per_token else torch.rand(batch, generator=g)
    args = (x.to(dtype), enc.to(dtype), (t * 1000).to(dtype), mask)
    kw = dict(num_frames=LTX_F, height=LTX_H, width=LTX_W,
              rope_interpolation_scale=(8 / 25, 32, 32), return_dict=False)
    return tuple(a.to(device) for a in args), kw


def run(model, args, kw):
    with torch.no_grad():
        return model(*args, **kw)[0]


def assert_ltx_accuracy(out, ref64_out, eager, args, kw, dtype):
    """fp32: within FP32_RTOL of the float64 model; bf16: at most BF16_VS_EAGER times the
    uninjected bf16 model's own error against it."""
    err = rel_err(out, ref64_out)
    if dtype == torch.float32:
        assert err < FP32_RTOL, f"relative error {err:.3g}"
    else:
        eager_err = rel_err(run(eager, args, kw), ref64_out)
        assert err <= BF16_VS_EAGER * eager_err, f"error {err:.3g}, eager bf16 {eager_err:.3g}"


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_matches_model(backend, dtype, per_token):
    kernel = load_kernel(backend)
    model = tiny_ltx()
    ref64 = copy.deepcopy(model).double().to(backend)
    eager = copy.deepcopy(model).to(device=backend, dtype=dtype)
    report = kernel.integrations.inject_ltx_video(model)  # on the CPU, before moving it
    model = model.to(device=backend, dtype=dtype)
    # blocks + attention processors + GELUs + head + feed-forward residual fused across blocks
    assert report.total == LTX_LAYERS + 2 * LTX_LAYERS + LTX_LAYERS + 1 + LTX_LAYERS, report

    args, kw = ltx_inputs(dtype, backend, per_token)
    out = run(model, args, kw)
    assert out.dtype == dtype and out.device.type == backend
    # the fused path ran (each feed-forward residual with the next norm1 or the head)
    n = count_ops(lambda: run(model, args, kw), "::gated_residual_adaln")
    assert n == LTX_CALLS["::gated_residual_adaln"]
    ref = run(ref64, tuple(a.double() for a in args), kw)
    assert_ltx_accuracy(out, ref, eager, args, kw, dtype)


@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_affine_block_norms(backend, per_token):
    """`norm_elementwise_affine=True`: the block norms have weights (adaln's weight path)."""
    kernel = load_kernel(backend)
    model = tiny_ltx(affine=True)
    ref = copy.deepcopy(model).to(backend)
    kernel.integrations.inject_ltx_video(model)
    model = model.to(backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token)
    err = rel_err(run(model, args, kw), run(ref, args, kw))
    assert err < FP32_RTOL, f"relative error {err:.3g}"
    calls = {op: count_ops(lambda: run(model, args, kw), op)
             for op in ("::adaln", "::gated_residual_adaln")}
    assert calls == {op: LTX_CALLS[op] for op in calls}  # weighted norms: no fallback


# profiler op-name suffix -> calls per forward of the tiny model
LTX_CALLS = {
    "::adaln": 1,  # norm1 of the first block
    # each block: x + attn2, norm2; x + ff * gate with the next block's norm1 or the head
    "::gated_residual_adaln": 2 * LTX_LAYERS,
    "::gated_residual": LTX_LAYERS,  # each block's x + attn1 * gate
    "::rms_norm_rope_qk": LTX_LAYERS,  # attn1: q and k together
    "::rms_norm": 2 * LTX_LAYERS,  # attn2 (no rope): q and k
    "::gelu_tanh": LTX_LAYERS,
}
# Under torch.compile a per-token gated residual stays the torch formula (inductor computes
# the gate with the modulation table's add in its kernel); per-sample gates take the op.


def ltx_compiled_calls(per_token: bool) -> dict[str, int]:
    return {**LTX_CALLS, "::gated_residual": 0} if per_token else LTX_CALLS


@pytest.mark.kernels_ci
@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_kernels_run(backend, per_token):
    kernel = load_kernel(backend)
    model = injected_tiny_ltx(kernel, backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token)
    calls = {op: count_ops(lambda: run(model, args, kw), op) for op in LTX_CALLS}
    assert calls == LTX_CALLS


def test_ltx_report_and_reinjection(backend):
    kernel = load_kernel(backend)
    model = tiny_ltx()
    report = kernel.integrations.inject_ltx_video(model)
    kinds = kernel.integrations.diffusers.LTX_KINDS
    assert report.replaced == {kinds["block"]: LTX_LAYERS, kinds["attn"]: 2 * LTX_LAYERS,
                               kinds["gelu"]: LTX_LAYERS, kinds["head"]: 1,
                               kinds["xblock"]: LTX_LAYERS}
    assert "LTXVideoTransformer3DModel" in str(report) and report.notes == []
    # a second injection changes nothing and reports the same
    again = kernel.integrations.inject_ltx_video(model)
    assert again.replaced == report.replaced
    args, kw = ltx_inputs(torch.float32, backend, per_token=False)
    assert count_ops(lambda: run(model.to(backend), args, kw), "::adaln") == LTX_CALLS["::adaln"]
    with pytest.raises(ValueError, match="no LTX-Video module"):
        kernel.integrations.inject_ltx_video(torch.nn.Linear(4, 4))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_ltx_gelu_in_matmul(backend, dtype):
    """`gelu_in_matmul=True`: each feed-forward's projection + GELU through `linear_gelu_tanh`
    (cuBLASLt's GELU epilogue on CUDA: no gelu_tanh call left there; gelu_tanh on the CPU),
    switched to from a default injection; the output as accurate as the default's, eagerly and
    compiled (fullgraph)."""
    kernel = load_kernel(backend)
    kinds = kernel.integrations.diffusers.LTX_KINDS
    model = tiny_ltx()
    ref64 = copy.deepcopy(model).double().to(backend)
    eager = copy.deepcopy(model).to(device=backend, dtype=dtype)
    kernel.integrations.inject_ltx_video(model)
    report = kernel.integrations.inject_ltx_video(model, gelu_in_matmul=True)
    assert report.replaced[kinds["gelu_in_matmul"]] == LTX_LAYERS
    assert kinds["gelu"] not in report.replaced
    model = model.to(device=backend, dtype=dtype)
    args, kw = ltx_inputs(dtype, backend, per_token=False)
    n = count_ops(lambda: run(model, args, kw), "::gelu_tanh")
    assert n == (0 if backend == "cuda" else LTX_LAYERS)
    ref = run(ref64, tuple(a.double() for a in args), kw)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    for out in (run(model, args, kw), run(compiled, args, kw)):
        assert_ltx_accuracy(out, ref, eager, args, kw, dtype)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_fuse_projections(backend, dtype, per_token):
    """`fuse_projections=True`: diffusers' fuse_qkv_projections() on every LTXAttention, and the
    processor reads q, k, v (self-attention) and k, v (cross-attention) from one matrix product
    each: three fewer linears a block; the output as accurate as the default injection's,
    eagerly and compiled (fullgraph), for per-sample and per-token timesteps."""
    kernel = load_kernel(backend)
    kinds = kernel.integrations.diffusers.LTX_KINDS
    model = tiny_ltx()
    ref64 = copy.deepcopy(model).double().to(backend)
    eager = copy.deepcopy(model).to(device=backend, dtype=dtype)
    unfused = copy.deepcopy(model)
    kernel.integrations.inject_ltx_video(unfused)
    unfused = unfused.to(device=backend, dtype=dtype)
    report = kernel.integrations.inject_ltx_video(model, fuse_projections=True)
    assert report.replaced[kinds["qkv"]] == 2 * LTX_LAYERS  # attn1 and attn2 of each block
    model = model.to(device=backend, dtype=dtype)
    args, kw = ltx_inputs(dtype, backend, per_token=per_token)
    n_fused = count_ops(lambda: run(model, args, kw), "aten::linear")
    n_unfused = count_ops(lambda: run(unfused, args, kw), "aten::linear")
    assert n_unfused - n_fused == 3 * LTX_LAYERS
    ref = run(ref64, tuple(a.double() for a in args), kw)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    for out in (run(model, args, kw), run(compiled, args, kw)):
        assert_ltx_accuracy(out, ref, eager, args, kw, dtype)


def ltx_block_inputs(model, args, per_token: bool, seed: int = 2):
    """Inputs of one block of `model` (hidden states, text, temb, rope), on args' device."""
    block = model.transformer_blocks[0]
    x = args[0]
    B, S, D = x.shape[0], x.shape[1], block.scale_shift_table.shape[1]
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, S, D, generator=g).to(x.device)
    enc = torch.randn(B, LTX_TEXT, D, generator=g).to(x.device)
    temb = torch.randn(B, S if per_token else 1, 6 * D, generator=g).to(x.device)
    rope = model.rope(x, LTX_F, LTX_H, LTX_W, (8 / 25, 32, 32))
    return h, enc, temb, rope


@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_block_pending_and_defer(backend, per_token):
    """The injected block's keyword-only extras: `ltx_defer=True` leaves out the feed-forward
    residual and returns it, `ltx_pending` applies one before norm1; without them the block
    gives diffusers' result."""
    kernel = load_kernel(backend)
    model = injected_tiny_ltx(kernel, backend)
    args, _ = ltx_inputs(torch.float32, backend, per_token)
    h, enc, temb, rope = ltx_block_inputs(model, args, per_token)
    b0, b1 = model.transformer_blocks[0], model.transformer_blocks[1]
    with torch.no_grad():
        ref0 = type(b0).forward(b0, h, enc, temb, rope)  # diffusers' forward
        out0 = b0(h, enc, temb, rope)
        assert rel_err(out0, ref0) < FP32_RTOL
        h0, ff0, gate0 = b0(h, enc, temb, rope, ltx_defer=True)
        assert gate0.shape == (h.shape[0], temb.shape[1], h.shape[2])
        assert rel_err(h0 + ff0 * gate0, ref0) < FP32_RTOL

        ref1 = type(b1).forward(b1, h0 + ff0 * gate0, enc, temb, rope)
        out1 = b1(h0, enc, temb, rope, ltx_pending=(ff0, gate0))
        assert rel_err(out1, ref1) < FP32_RTOL
        n = count_ops(lambda: b1(h0, enc, temb, rope, ltx_pending=(ff0, gate0)),
                      "::gated_residual_adaln")
        assert n == 2  # x + ff * gate with norm1, x + attn2 with norm2
        h1, ff1, gate1 = b1(h0, enc, temb, rope, ltx_pending=(ff0, gate0), ltx_defer=True)
        assert rel_err(h1 + ff1 * gate1, ref1) < FP32_RTOL


def test_ltx_residual_modulated_norm_fallback(backend):
    """The fused residual + norm falls back to the plain steps where the kernel cannot give
    the module's dtypes (here a float32 gate on bfloat16 hidden states, which eager promotes
    to float32), and otherwise matches them."""
    kernel = load_kernel(backend)
    fn = kernel.integrations.diffusers._residual_modulated_norm
    norm = torch.nn.LayerNorm(64, eps=1e-6, elementwise_affine=False)
    g = torch.Generator().manual_seed(3)
    x, y = (torch.randn(2, 6, 64, generator=g).to(backend, torch.bfloat16) for _ in range(2))
    scale, shift, gate = (0.5 * torch.randn(2, 1, 64, generator=g).to(backend) for _ in range(3))

    x_new, h = fn(norm, x, y, scale.bfloat16(), shift.bfloat16(), gate)  # fp32 gate
    ref_x = x + y * gate
    assert x_new.dtype == torch.float32 and torch.equal(x_new, ref_x)
    assert torch.equal(h, norm(ref_x) * (1 + scale.bfloat16()) + shift.bfloat16())

    x, y, scale, shift, gate = (t.float() for t in (x, y, scale, shift, gate))
    n = count_ops(lambda: fn(norm, x, y, scale, shift, gate), "::gated_residual_adaln")
    assert n == 1
    x_new, h = fn(norm, x, y, scale, shift, gate)
    ref_x = x + y * gate
    assert rel_err(x_new, ref_x) < FP32_RTOL
    assert rel_err(h, norm(ref_x) * (1 + scale) + shift) < FP32_RTOL


@pytest.mark.kernels_ci
def test_ltx_gated_add(backend):
    """The gated residual step: one `gated_residual` where it gives the torch formula's dtype
    and shape (a strided per-sample gate, as LTX's modulation views are), the torch formula
    where it does not (a float32 gate promotes bfloat16 hidden states; a gate that broadcasts
    x to a larger shape, in a dim or by having more dims)."""
    kernel = load_kernel(backend)
    fn = kernel.integrations.diffusers._gated_add
    g = torch.Generator().manual_seed(4)
    x, y = (torch.randn(2, 6, 64, generator=g).to(backend, torch.bfloat16) for _ in range(2))
    ada = torch.randn(2, 1, 6, 64, generator=g).to(backend, torch.bfloat16)
    gate = ada.unbind(dim=2)[2]
    assert count_ops(lambda: fn(x, y, gate), "::gated_residual") == 1
    assert torch.equal(fn(x, y, gate), kernel.gated_residual(x, y, gate))
    assert rel_err(fn(x, y, gate), x.double() + y.double() * gate.double()) < 4e-3

    gate32 = gate.float()
    assert count_ops(lambda: fn(x, y, gate32), "::gated_residual") == 0
    got = fn(x, y, gate32)
    assert got.dtype == torch.float32 and torch.equal(got, x + y * gate32)
    per_token = torch.randn(2, 6, 64, generator=g).to(backend, torch.bfloat16)
    x1, y1 = x[:, :1], y[:, :1]
    assert count_ops(lambda: fn(x1, y1, per_token), "::gated_residual") == 0
    assert torch.equal(fn(x1, y1, per_token), torch.addcmul(x1, y1, per_token))
    extra_dim = gate.unsqueeze(0)  # [1, 2, 1, 64]: broadcasts x to [1, 2, 6, 64]
    assert count_ops(lambda: fn(x, y, extra_dim), "::gated_residual") == 0
    assert fn(x, y, extra_dim).shape == (1, 2, 6, 64)


def test_ltx_block_hook_after_injection(backend):
    """A block whose forward is wrapped after the injection is called as diffusers calls it,
    the pending feed-forward residual applied first (the wrapper may read the block's output
    as the hidden states): a plain wrapper on the last block, then diffusers' first-block
    cache on all of them, on a computed step and on a cached one; same output as the
    uninjected model."""
    import functools

    model, ref = injected_and_reference(backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token=True)

    last = model.transformer_blocks[-1]
    injected_forward = last.forward
    last.forward = functools.update_wrapper(
        functools.partial(lambda module, *a, **k: injected_forward(*a, **k), last),
        injected_forward)
    assert rel_err(run(model, args, kw), run(ref, args, kw)) < FP32_RTOL
    calls = {op: count_ops(lambda: run(model, args, kw), op)
             for op in ("::adaln", "::gated_residual_adaln", "::gated_residual")}
    # fused up to the last block; its norm1 and the head unfused, the pending feed-forward
    # residual applied before it and its own after it each a gated_residual
    assert calls == {"::adaln": 3, "::gated_residual_adaln": 2 * LTX_LAYERS - 2,
                     "::gated_residual": LTX_LAYERS + 2}
    last.forward = injected_forward

    hooks = pytest.importorskip("diffusers.hooks")
    if not hasattr(hooks, "FirstBlockCacheConfig"):
        pytest.skip("diffusers without FirstBlockCacheConfig")
    for m in (model, ref):  # a threshold this large reuses the cache from the second step on
        m.enable_cache(hooks.FirstBlockCacheConfig(threshold=10.0))
    for step in range(2):
        step_args = (args[0] * (1 + 0.01 * step),) + args[1:]
        with model.cache_context("cond"):
            out = run(model, step_args, kw)
        with ref.cache_context("cond"):
            expected = run(ref, step_args, kw)
        assert rel_err(out, expected) < FP32_RTOL, f"step {step}"
    with model.cache_context("cond"):  # cached: only the first block runs
        n = count_ops(lambda: run(model, step_args, kw), "::gated_residual_adaln")
    assert n == 1


def test_ltx_attention_direct_calls_and_mask(backend, monkeypatch):
    """Host-time shortcuts of the injected LTX forward, same output as the uninjected model:
    the cross-attention mask is prepared per head once a forward (not once a block), and the
    attention processors are called directly only while nothing wraps the attention modules:
    a forward hook on one module, or a global one, is called as it is without the injection."""
    model, ref = injected_and_reference(backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token=False)
    attn_cls = type(model.transformer_blocks[0].attn2)
    prepared = []
    original = attn_cls.prepare_attention_mask
    monkeypatch.setattr(attn_cls, "prepare_attention_mask",
                        lambda self, *a, **k: prepared.append(self) or original(self, *a, **k))
    forwards = []
    module_forward = attn_cls.forward
    monkeypatch.setattr(attn_cls, "forward", lambda self, *a, **k: forwards.append(self)
                        or module_forward(self, *a, **k))
    out = run(model, args, kw)
    assert not forwards and len(prepared) == 1  # the processors called directly, the mask once
    assert rel_err(out, run(ref, args, kw)) < FP32_RTOL
    assert len(forwards) == 2 * LTX_LAYERS and len(prepared) == 1 + LTX_LAYERS
    prepared.clear()
    # a mask no processor of ours takes: prepared by each block (diffusers' own processor)
    block = model.transformer_blocks[0]
    own = block.attn2.processor
    block.attn2.set_processor(own.original)
    assert rel_err(run(model, args, kw), run(ref, args, kw)) < FP32_RTOL
    assert len(prepared) == 2 * LTX_LAYERS
    block.attn2.set_processor(own)

    seen = []
    handle = block.attn2.register_forward_hook(lambda m, a, out: seen.append(m))
    assert rel_err(run(model, args, kw), run(ref, args, kw)) < FP32_RTOL
    assert seen == [block.attn2]  # called once, through the module
    handle.remove()
    seen.clear()
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda m, a, out: seen.append(m) if type(m).__name__ == "LTXAttention" else None)
    try:
        out = run(model, args, kw)
    finally:
        handle.remove()
    assert len(seen) == 2 * LTX_LAYERS
    assert rel_err(out, run(ref, args, kw)) < FP32_RTOL
    seen.clear()
    forwards.clear()
    run(model, args, kw)  # no hooks left: called directly again, unseen
    assert not seen and not forwards
    # a backward hook (training) or a per-instance forward: the module is called too
    handle = block.attn1.register_full_backward_hook(lambda m, gi, go: None)
    run(model, args, kw)
    handle.remove()
    block.attn2.forward = types.MethodType(attn_cls.forward, block.attn2)
    run(model, args, kw)
    del block.attn2.forward
    assert forwards == [block.attn1, block.attn2]


def test_ltx_custom_processor_kept(backend):
    """A processor other than diffusers' default is left alone, and the report says so."""
    kernel = load_kernel(backend)
    model = tiny_ltx()

    class MyProcessor(type(model.transformer_blocks[0].attn1.processor)):
        pass

    model.transformer_blocks[0].attn1.set_processor(MyProcessor())
    report = kernel.integrations.inject_ltx_video(model)
    kinds = kernel.integrations.diffusers.LTX_KINDS
    assert report.replaced[kinds["attn"]] == 2 * LTX_LAYERS - 1
    assert any("MyProcessor" in n for n in report.notes)
    assert isinstance(model.transformer_blocks[0].attn1.processor, MyProcessor)


def test_ltx_offload_hook_after_injection(backend):
    """What `enable_model_cpu_offload()` does to a module (accelerate's `add_hook_to_module`:
    keep the current forward as `_old_forward`, install a wrapper that moves the inputs to the
    execution device) works on an injected model; injecting after such a hook is refused,
    since replacing the forward would drop the hook."""
    import functools
    import types

    kernel = load_kernel(backend)
    model = tiny_ltx()
    ref = copy.deepcopy(model).to(backend)
    kernel.integrations.inject_ltx_video(model)

    def offload_hook(module, device):
        module._old_forward = module.forward

        def new_forward(self, *args, **kwargs):
            self.to(device)
            args = tuple(a.to(device) if torch.is_tensor(a) else a for a in args)
            return self._old_forward(*args, **kwargs)

        module.forward = functools.update_wrapper(functools.partial(new_forward, module),
                                                  module._old_forward)

    offload_hook(model, torch.device(backend))
    args, kw = ltx_inputs(torch.float32, "cpu", per_token=True)  # inputs on the CPU
    n = count_ops(lambda: run(model, args, kw), "::rms_norm_rope_qk")
    assert n == LTX_LAYERS
    out = run(model, args, kw)
    assert out.device.type == backend
    err = rel_err(out, run(ref, tuple(a.to(backend) for a in args), kw))
    assert err < FP32_RTOL

    hooked = tiny_ltx()
    block = hooked.transformer_blocks[0]
    block.forward = types.MethodType(lambda self, *a, **k: None, block)
    with pytest.raises(RuntimeError, match="before enable_model_cpu_offload"):
        kernel.integrations.inject_ltx_video(hooked)


@pytest.mark.slow
@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_compile_fullgraph(backend, per_token):
    """The injected transformer and one injected block under `torch.compile(fullgraph=True)`:
    no graph break (fullgraph raises on one), the ops stay in the graph, same output."""
    kernel = load_kernel(backend)
    model = injected_tiny_ltx(kernel, backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token)
    ref = run(model, args, kw)

    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    out = run(compiled, args, kw)
    assert rel_err(out, ref) < FP32_RTOL
    want = ltx_compiled_calls(per_token)
    calls = {op: count_ops(lambda: run(compiled, args, kw), op) for op in want}
    assert calls == want

    # one block, as diffusers' compile_repeated_blocks compiles them
    block = model.transformer_blocks[0]
    h, enc, temb, rope = ltx_block_inputs(model, args, per_token)
    with torch.no_grad():
        ref_block = block(h, enc, temb, rope)
        out_block = torch.compile(block, fullgraph=True)(h, enc, temb, rope)
    assert rel_err(out_block, ref_block) < FP32_RTOL


def test_ltx_rope_tables_shared(backend):
    """The injected forward computes LTX's rope tables for one sample and expands them over
    the batch (stride 0) when every sample's are the same, equal to the module's own; per-sample
    coordinates or a per-sample scale run the module as is. With pair tables: one value a
    pair of the same tables, `[1, S, D/2]` shared (broadcast by the op), `[B, S, D/2]` per
    sample."""
    from diffusers.models.transformers.transformer_ltx import LTXVideoRotaryPosEmbed

    tables = load_kernel(backend).integrations.diffusers._ltx_rope_tables
    rope = LTXVideoRotaryPosEmbed(64)
    x = torch.randn(3, LTX_F * LTX_H * LTX_W, 8, device=backend)
    scale = (torch.tensor(8 / 25), 32, 32)
    want = rope(x, LTX_F, LTX_H, LTX_W, scale, None)
    got = tables(rope, x, LTX_F, LTX_H, LTX_W, scale, None)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.stride(0) == 0 and torch.equal(g, w)
    *got, flag = tables(rope, x, LTX_F, LTX_H, LTX_W, scale, None, pairs=True)
    assert flag is True
    for g, w in zip(got, want):
        assert g.shape == (1, x.shape[1], 32) and g.is_contiguous()
        assert torch.equal(g.expand(3, -1, -1), w[..., 0::2])
    coords = torch.rand(3, 3, x.shape[1], device=backend) * 4
    for args in ((scale, coords), ((torch.rand(3, 1, 1, 1, 1, device=backend), 32, 32), None)):
        want = rope(x, LTX_F, LTX_H, LTX_W, *args)
        assert not torch.equal(want[0][0], want[0][1])  # the samples' tables differ
        got = tables(rope, x, LTX_F, LTX_H, LTX_W, *args)
        assert all(g.stride(0) != 0 and torch.equal(g, w) for g, w in zip(got, want))
        *got, _ = tables(rope, x, LTX_F, LTX_H, LTX_W, *args, pairs=True)
        assert all(torch.equal(g, w[..., 0::2]) for g, w in zip(got, want))


def test_ltx_pair_tables(backend):
    """The injected model reads pair tables when the rope module repeats each value per pair
    (diffusers' does, checked at injection) and every block's self-attention has the kernel
    processor; a processor set after the injection, or a rope module whose pairs differ, gets
    full tables. The output matches the uninjected model in each case."""
    from diffusers.models.transformers.transformer_ltx import LTXVideoAttnProcessor

    diff = load_kernel(backend).integrations.diffusers
    model = tiny_ltx()
    ref = copy.deepcopy(model).to(backend)
    report = load_kernel(backend).integrations.inject_ltx_video(model)
    model = model.to(backend)
    assert model._ltx_kernels_rope_pairs and diff._ltx_pair_tables_ok(model)
    assert not any("rope tables kept full" in n for n in report.notes)
    args, kw = ltx_inputs(torch.float32, backend, per_token=False)
    seen = []

    def spy(cos, sin, *flag):
        seen.append((cos.shape[-1], bool(flag and flag[0])))
        return (cos, sin, *flag)

    orig = diff._realized
    diff._realized = lambda t: orig(spy(*t))
    try:
        assert rel_err(run(model, args, kw), run(ref, args, kw)) < FP32_RTOL
        assert seen[-1] == (32, True)  # inner dim 64: 32 pairs
        # a processor set after the injection: the module's own tables
        model.transformer_blocks[1].attn1.set_processor(LTXVideoAttnProcessor())
        assert not diff._ltx_pair_tables_ok(model)
        assert rel_err(run(model, args, kw), run(ref, args, kw)) < FP32_RTOL
        assert seen[-1] == (64, False)
    finally:
        diff._realized = orig

    class Unpaired(torch.nn.Module):  # a rope whose pairs differ: never pair tables
        def forward(self, x, f, h, w, scale, coords):
            t = torch.randn(x.size(0), f * h * w, 64)
            return t.cos(), t.sin()

    assert not diff._ltx_rope_pairs_equal(Unpaired())
    assert diff._ltx_rope_pairs_equal(ref.rope)


def _top_level_args(call: str) -> list:
    """The comma-separated arguments of a generated call, nested parentheses kept whole."""
    args, depth, cur = [], 0, ""
    for ch in call:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return args + [cur.strip()]


def injected_ltx_d48(kernel, backend):
    """3 layers of 2 heads x 48: an inner dim that is a multiple of 6 (no padding columns, so
    no concatenation in the rope tables), injected on the CPU, then moved to `backend`."""
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    model = LTXVideoTransformer3DModel(
        in_channels=8, out_channels=8, num_attention_heads=2, attention_head_dim=48,
        cross_attention_dim=96, num_layers=3, caption_channels=16).eval()
    kernel.integrations.inject_ltx_video(model)
    return model.to(backend)


def rms_norm_rope_qk_calls(codes) -> list:
    """The argument lists of inductor's `rms_norm_rope_qk` calls in its generated code:
    `(q_out, k_out, q, k, q_weight, k_weight, cos, sin, eps, ...)`."""
    return re.findall(r"rms_norm_rope_qk\.default\((.*)\)", "\n".join(codes))


@pytest.mark.kernels_ci
def test_ltx_compile_rope_tables_once(backend):
    """Under torch.compile of the whole injected model, every block's `rms_norm_rope_qk` reads
    the same cos / sin buffers: inductor computes the rope tables once per forward. torch 2.11's
    inductor materialized them again for every block (24 us each at LTX-Video 2B's size on the
    H200) until the tables were passed as as_strided views; on its CPU backend this shows with
    an inner dim that is a multiple of 6 (no padding columns, so no concatenation in the
    tables), as here: 2 heads x 48."""
    from torch._inductor.utils import run_and_get_code

    model = injected_ltx_d48(load_kernel(backend), backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token=False)
    torch._dynamo.reset()
    with torch.no_grad():
        _, codes = run_and_get_code(torch.compile(model, fullgraph=True), *args, **kw)
    calls = rms_norm_rope_qk_calls(codes)
    assert len(calls) == 3
    tables = {tuple(_top_level_args(c)[6:8]) for c in calls}
    assert len(tables) == 1, tables


MODULATION_ARGS = {"adaln": (2, 3), "gated_residual": (3,), "gated_residual_adaln": (4, 5, 6)}


@pytest.mark.kernels_ci
def test_ltx_compile_modulation_once_a_block(backend):
    """Under torch.compile of the whole injected model, each block's modulation
    (`scale_shift_table + temb`) is one buffer that its adaln / gated_residual /
    gated_residual_adaln calls read as views: without the as_strided view in
    `_ltx_block_forward`, inductor computed a buffer for each slice (each shift, scale and gate
    its own, 4 more kernels for this 3-block model on its CPU backend; 0.15 ms a step of tiny
    kernels and their gaps in LTX-Video 2B's compiled step on the H200, run X). The output
    head's own shift / scale (the last call) are the one exception."""
    from torch._inductor.utils import run_and_get_code

    model = injected_ltx_d48(load_kernel(backend), backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token=False)
    torch._dynamo.reset()
    with torch.no_grad():
        _, codes = run_and_get_code(torch.compile(model, fullgraph=True), *args, **kw)
    calls = re.findall(r"\.(adaln|gated_residual|gated_residual_adaln)\.default\((.*)\)",
                       "\n".join(codes))
    assert [op for op, _ in calls].count("gated_residual") == 3
    bases = set()
    for i, (op, call) in enumerate(calls):
        head = i == len(calls) - 1
        for pos in MODULATION_ARGS[op]:
            arg = _top_level_args(call)[pos]
            if arg == "None" or (head and pos in (5, 6)):
                continue
            view = re.fullmatch(r"reinterpret_tensor\((\w+), .*", arg)
            assert view, (op, pos, arg)
            bases.add(view[1])
    assert len(bases) == 3, bases


@pytest.mark.kernels_ci
def test_ltx_compile_freezing_split_projections(backend):
    """With inductor freezing, the q, k and v projections of one input become one matmul whose
    output is split (inductor's concat-linear pass; on its CPU backend only with
    `cpp.enable_concat_linear` and without weight prepacking, as here, which leaves addmm with
    the bias in it as on CUDA). The ops ask for their inputs' stride order only
    (`needs_fixed_stride_order`), so `rms_norm_rope_qk` reads q and k as the split views of
    that one output; under torch 2.11's default rule for custom ops (exact strides) inductor
    copied both before every call (22 MB each at LTX-Video 2B's size, 0.86 ms a step on the
    H200). The compiled model matches the uncompiled one."""
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    model = injected_ltx_d48(load_kernel(backend), backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token=False)
    ref = run(model, args, kw)
    torch._dynamo.reset()
    # fx_graph_cache off: the cache key does not hold the ops' tags, so code compiled for
    # another build of the ops could be reused
    patch = {"freezing": True, "cpp.enable_concat_linear": True, "cpp.weight_prepack": False,
             "fx_graph_cache": False}
    with torch.no_grad(), inductor_config.patch(patch):
        (out, *_), codes = run_and_get_code(torch.compile(model, fullgraph=True), *args, **kw)
    torch._dynamo.reset()
    assert rel_err(out, ref) < FP32_RTOL
    calls = rms_norm_rope_qk_calls(codes)
    assert len(calls) == 3
    for call in calls:
        q, k = _top_level_args(call)[2:4]
        views = [re.fullmatch(r"reinterpret_tensor\((\w+), .*", a) for a in (q, k)]
        assert all(views) and views[0][1] == views[1][1], (q, k)


@pytest.mark.slow
@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_compile_repeated_blocks(backend, per_token):
    """Regional compilation (`compile_repeated_blocks`: `block.compile(fullgraph=True)` for
    each block) of the injected model: the transformer forward calls the compiled blocks with
    the pending feed-forward residual, without graph breaks; the fused ops stay in the graphs,
    same output. The first block (no pending residual) and the others are two graphs; a second
    forward compiles nothing more."""
    kernel = load_kernel(backend)
    model = injected_tiny_ltx(kernel, backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token)
    ref = run(model, args, kw)

    torch._dynamo.reset()
    model.compile_repeated_blocks(fullgraph=True)
    assert rel_err(run(model, args, kw), ref) < FP32_RTOL
    want = ltx_compiled_calls(per_token)
    with torch._dynamo.config.patch(error_on_recompile=True):
        calls = {op: count_ops(lambda: run(model, args, kw), op) for op in want}
    assert calls == want
    torch._dynamo.reset()


# ---- FLUX --------------------------------------------------------------------------------------

FLUX_H, FLUX_W, FLUX_TEXT = 4, 4, 6


def tiny_flux():
    """One double-stream and one single-stream block, 2 heads x 16 (rope axes 4 + 6 + 6),
    random weights, non-trivial q/k norm weights; fp32 on the CPU."""
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1, in_channels=8, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=16,
        guidance_embeds=False, axes_dims_rope=(4, 6, 6),
    ).eval()
    for m in model.modules():
        if type(m).__name__ == "RMSNorm" and getattr(m, "weight", None) is not None:
            m.weight.data = 1 + 0.2 * torch.randn_like(m.weight)
    return model


def flux_inputs(dtype, device, batch: int = 2):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, FLUX_H * FLUX_W, 8, generator=g)
    enc = torch.randn(batch, FLUX_TEXT, 32, generator=g)
    pooled = torch.randn(batch, 16, generator=g)
    t = torch.rand(batch, generator=g)
    img_ids = torch.zeros(FLUX_H * FLUX_W, 3)
    img_ids[:, 1] = torch.arange(FLUX_H).repeat_interleave(FLUX_W)
    img_ids[:, 2] = torch.arange(FLUX_W).repeat(FLUX_H)
    txt_ids = torch.zeros(FLUX_TEXT, 3)
    args = tuple(a.to(device=device, dtype=dtype) for a in (x, enc, pooled, t))
    kw = dict(img_ids=img_ids.to(device), txt_ids=txt_ids.to(device), return_dict=False)
    return args, kw


FLUX_CALLS = {
    "::rms_norm_rope_qk": 3,  # double block: text part, image part; single block
    "::adaln": 4,  # AdaLayerNormZero x 2 (image, text), AdaLayerNormZeroSingle, output head
    "::gelu_tanh": 3,  # feed-forward x 2 (image, text), single-stream MLP
}


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_flux_matches_model(backend, dtype):
    kernel = load_kernel(backend)
    model = tiny_flux()
    ref64 = copy.deepcopy(model).double().to(backend)
    eager = copy.deepcopy(model).to(device=backend, dtype=dtype)
    report = kernel.integrations.inject_flux(model)
    model = model.to(device=backend, dtype=dtype)
    kinds = kernel.integrations.diffusers.FLUX_KINDS
    assert report.replaced == {kinds["adaln_zero"]: 2, kinds["attn"]: 2, kinds["gelu"]: 2,
                               kinds["adaln_zero_single"]: 1, kinds["act_mlp"]: 1,
                               kinds["adaln_continuous"]: 1}, report

    args, kw = flux_inputs(dtype, backend)
    out = run(model, args, kw)
    ref = run(ref64, tuple(a.double() for a in args), {**kw, "img_ids": kw["img_ids"].double(),
                                                       "txt_ids": kw["txt_ids"].double()})
    err = rel_err(out, ref)
    if dtype == torch.float32:
        assert err < FP32_RTOL, f"relative error {err:.3g}"
    else:  # see BF16_VS_EAGER
        eager_err = rel_err(run(eager, args, kw), ref)
        assert err <= BF16_VS_EAGER * eager_err, f"error {err:.3g}, eager bf16 {eager_err:.3g}"
    calls = {op: count_ops(lambda: run(model, args, kw), op) for op in FLUX_CALLS}
    assert calls == FLUX_CALLS


@pytest.mark.slow
def test_flux_compile_fullgraph(backend):
    kernel = load_kernel(backend)
    model = tiny_flux()
    kernel.integrations.inject_flux(model)
    model = model.to(backend)
    args, kw = flux_inputs(torch.float32, backend)
    ref = run(model, args, kw)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    assert rel_err(run(compiled, args, kw), ref) < FP32_RTOL
    assert count_ops(lambda: run(compiled, args, kw), "::rms_norm_rope_qk") == 3


def test_processor_signature_precomputed(backend):
    """diffusers' attention forward calls `inspect.signature(processor.__call__)` on every call
    to filter its kwargs; the kernel processors store the signature, so that it is returned at
    once, and it is still the bound call's (without `self`)."""
    import inspect

    kernel = load_kernel(backend)
    d = kernel.integrations.diffusers
    for cls in (d.LTXVideoKernelAttnProcessor, d.FluxKernelAttnProcessor):
        assert "__signature__" in cls.__call__.__dict__
        bound = cls.__new__(cls).__call__
        assert list(inspect.signature(bound).parameters)[:2] == ["attn", "hidden_states"]
