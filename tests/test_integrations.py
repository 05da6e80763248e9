"""Whole diffusers transformers with the kernels injected (`ltx_kernels.integrations`): small
configs with random weights (no download) give the model's output, the kernels really run
(counted with the profiler), and the injected model compiles with `fullgraph=True`.

Models are built on the CPU, injected there, then moved to the test's device: the injection
must not capture a device (it is meant to run before `enable_model_cpu_offload()`).
"""

import copy

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
    ref = run(ref64, tuple(a.double() for a in args), kw)
    err = rel_err(out, ref)
    if dtype == torch.float32:
        assert err < FP32_RTOL, f"relative error {err:.3g}"
    else:
        eager_err = rel_err(run(eager, args, kw), ref)
        assert err <= BF16_VS_EAGER * eager_err, f"error {err:.3g}, eager bf16 {eager_err:.3g}"


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


# profiler op-name suffix -> calls per forward of the tiny model
LTX_CALLS = {
    "::adaln": 1,  # norm1 of the first block
    # each block: x + attn2, norm2; x + ff * gate with the next block's norm1 or the head
    "::gated_residual_adaln": 2 * LTX_LAYERS,
    "::rms_norm_rope": 2 * LTX_LAYERS,  # attn1: q and k
    "::rms_norm": 2 * LTX_LAYERS,  # attn2 (no rope): q and k
    "::gelu_tanh": LTX_LAYERS,
}


@pytest.mark.kernels_ci
@pytest.mark.parametrize("per_token", [False, True], ids=["per_sample", "per_token"])
def test_ltx_kernels_run(backend, per_token):
    kernel = load_kernel(backend)
    model = tiny_ltx()
    kernel.integrations.inject_ltx_video(model)
    model = model.to(backend)
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
    n = count_ops(lambda: run(model, args, kw), "::rms_norm_rope")
    assert n == 2 * LTX_LAYERS
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
    model = tiny_ltx()
    kernel.integrations.inject_ltx_video(model)
    model = model.to(backend)
    args, kw = ltx_inputs(torch.float32, backend, per_token)
    ref = run(model, args, kw)

    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    out = run(compiled, args, kw)
    assert rel_err(out, ref) < FP32_RTOL
    assert count_ops(lambda: run(compiled, args, kw), "::rms_norm_rope") == 2 * LTX_LAYERS

    # one block, as diffusers' compile_repeated_blocks compiles them
    block = model.transformer_blocks[0]
    B, S, D = args[0].shape[0], args[0].shape[1], block.scale_shift_table.shape[1]
    g = torch.Generator().manual_seed(2)
    h = torch.randn(B, S, D, generator=g).to(backend)
    enc = torch.randn(B, LTX_TEXT, D, generator=g).to(backend)
    temb = torch.randn(B, S if per_token else 1, 6 * D, generator=g).to(backend)
    rope = model.rope(args[0], LTX_F, LTX_H, LTX_W, (8 / 25, 32, 32))
    with torch.no_grad():
        ref_block = block(h, enc, temb, rope)
        out_block = torch.compile(block, fullgraph=True)(h, enc, temb, rope)
    assert rel_err(out_block, ref_block) < FP32_RTOL


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
    "::rms_norm_rope": 6,  # double block: q and k of text and image parts; single block: q, k
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
    assert count_ops(lambda: run(compiled, args, kw), "::rms_norm_rope") == 6
