"""adaln, gated_residual_adaln and gated_residual: against float64 references on every backend,
dtype, layout, norm and the DESIGN.md hidden sizes, with scale / shift / gate broadcast per
tensor, per sample and per token; gated_residual bit for bit gated_residual_adaln's residual;
LTX-Video's own shapes and strided views; opcheck; torch.compile; bad inputs."""

from pathlib import Path

import pytest
import torch

from conftest import DTYPES, LAYOUTS, assert_close, make_input, poisoned

HIDDEN_SIZES = [1, 7, 8, 768, 769, 2048, 3072, 5120, 5125, 8192, 16384]
NORMS = ["rms", "layer"]
B, S = 2, 3  # few rows: the hidden sizes make the work


# ---- float64 references ----------------------------------------------------------------------


def ref_norm(x, norm, eps):
    xd = x.double()
    if norm == "layer":
        xd = xd - xd.mean(-1, keepdim=True)
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)


def ref_adaln(x, scale, shift, norm="rms", weight=None, bias=None, eps=1e-6):
    """`(norm(x) [* weight] [+ bias]) * (1 + scale) + shift` in float64, no rounding."""
    n = ref_norm(x, norm, eps)
    if weight is not None:
        n = n * weight.double()
    if bias is not None:
        n = n + bias.double()
    return n * (1 + scale.double()) + shift.double()


def ref_residual(x, y, gate):
    """`x + y * gate` in float64 (rounded by the caller's comparison)."""
    return x.double() + y.double() * (gate.double() if gate is not None else 1.0)


# ---- operands ----------------------------------------------------------------------------------


def check_adaln_and_gated(kernel, x, y, gate, scale, shift, norm):
    """adaln into a poisoned `out` (every element must be written) and gated_residual_adaln,
    each against its reference; h's reference starts from the kernel's own x_new; and
    gated_residual, bit for bit x_new."""
    out = poisoned(x.shape, x.dtype, x.device)
    kernel.adaln(x, scale, shift, norm=norm, out=out)
    assert_close(out, ref_adaln(x, scale, shift, norm))
    x_new, h = kernel.gated_residual_adaln(x, y, gate, scale, shift, norm=norm)
    assert_close(x_new, ref_residual(x, y, gate))
    assert_close(h, ref_adaln(x_new, scale, shift, norm))
    assert torch.equal(kernel.gated_residual(x, y, gate, out=out), x_new)


def mod_shape(kind, lead, D):
    """A modulation operand's shape for x `[*lead, D]`: one row for all (`"D"`), one per
    sample (`"sample"`: `[B, 1, D]`, as DiT's `scale[:, None]`) or one per token (`"token"`)."""
    if kind == "D":
        return (D,)
    if kind == "sample":
        return (lead[0],) + (1,) * (len(lead) - 1) + (D,)
    return tuple(lead) + (D,)


def make_mod(kind, lead, D, dtype, device):
    return (0.5 * torch.randn(mod_shape(kind, lead, D), device=device)).to(dtype)


def make_affine(kind, D, dtype, device):
    """(weight, bias): kind is "none", "w" (weight only) or "wb", with "32" for float32."""
    if kind == "none":
        return None, None
    adt = torch.float32 if kind.endswith("32") else dtype
    w = (1.0 + 0.5 * torch.randn(D, device=device)).to(adt)
    b = (0.3 * torch.randn(D, device=device)).to(adt) if kind.startswith("wb") else None
    return w, b


# (scale/shift broadcast, their dtype, affine): the reference tests run each hidden size and
# layout with both, so that broadcasts, fp32 operands and the affine meet the vector and the
# scalar paths; test_adaln_operands covers the full product at two sizes.
CASES = [
    pytest.param("sample", "same", "none", id="sample-same-noaffine"),
    pytest.param("token", "fp32", "wb32", id="token-fp32-wb32"),
]


@pytest.mark.parametrize("mkind,mdtype,akind", CASES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaln_reference(kernel, device, dtype, D, norm, layout, mkind, mdtype, akind):
    x = make_input((B, S, D), dtype, device, layout)
    mdt = torch.float32 if mdtype == "fp32" else dtype
    scale = make_mod(mkind, (B, S), D, mdt, device)
    shift = make_mod(mkind, (B, S), D, mdt, device)
    w, b = make_affine(akind, D, dtype, device)
    out = poisoned(x.shape, dtype, device)
    y = kernel.adaln(x, scale, shift, norm=norm, weight=w, bias=b, eps=1e-6, out=out)
    assert y is out
    assert_close(out, ref_adaln(x, scale, shift, norm, w, b, 1e-6))


# (gate broadcast or None, scale/shift broadcast, their dtype, affine)
GATED_CASES = [
    pytest.param("sample", "sample", "same", "none", id="gate_sample-same"),
    pytest.param("token", "token", "fp32", "wb32", id="gate_token-fp32-wb32"),
    pytest.param(None, "D", "same", "w", id="nogate-D-same-w"),
]


@pytest.mark.parametrize("gkind,mkind,mdtype,akind", GATED_CASES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_residual_adaln_reference(kernel, device, dtype, D, norm, layout, gkind, mkind,
                                        mdtype, akind):
    x = make_input((B, S, D), dtype, device, layout)
    yb = make_input((B, S, D), dtype, device, layout)
    mdt = torch.float32 if mdtype == "fp32" else dtype
    gate = make_mod(gkind, (B, S), D, mdt, device) if gkind else None
    scale = make_mod(mkind, (B, S), D, mdt, device)
    shift = make_mod(mkind, (B, S), D, mdt, device)
    w, b = make_affine(akind, D, dtype, device)
    out = poisoned(x.shape, dtype, device)
    res = poisoned(x.shape, dtype, device)
    x_new, h = kernel.gated_residual_adaln(x, yb, gate, scale, shift, norm=norm, weight=w,
                                           bias=b, out=out, residual_out=res)
    assert x_new is res and h is out
    # x_new: fp32 math rounded once to x's dtype.
    assert_close(x_new, ref_residual(x, yb, gate))
    # h is the norm of the rounded x_new, as the unfused model computes it: the reference starts
    # from the kernel's own x_new, so that the two comparisons are independent.
    assert_close(h, ref_adaln(x_new, scale, shift, norm, w, b, 1e-6))


@pytest.mark.parametrize("akind", ["none", "w", "w32", "wb", "wb32"])
@pytest.mark.parametrize("mdtype", ["same", "fp32"])
@pytest.mark.parametrize("mkind", ["D", "sample", "token"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaln_operands(kernel, device, dtype, norm, mkind, mdtype, akind):
    """Every combination of broadcast, modulation dtype and affine, on the vector path
    (D = 776: 97 16-byte vectors of 16-bit values) and the scalar path (D = 771)."""
    mdt = torch.float32 if mdtype == "fp32" else dtype
    for D in (776, 771):
        x = torch.randn(B, S, D, dtype=dtype, device=device)
        yb = torch.randn(B, S, D, dtype=dtype, device=device)
        gate = make_mod(mkind, (B, S), D, mdt, device)
        scale = make_mod(mkind, (B, S), D, mdt, device)
        shift = make_mod(mkind, (B, S), D, mdt, device)
        w, b = make_affine(akind, D, dtype, device)
        h = kernel.adaln(x, scale, shift, norm=norm, weight=w, bias=b)
        assert_close(h, ref_adaln(x, scale, shift, norm, w, b, 1e-6))
        x_new, h = kernel.gated_residual_adaln(x, yb, gate, scale, shift, norm=norm, weight=w,
                                               bias=b)
        assert_close(x_new, ref_residual(x, yb, gate))
        assert_close(h, ref_adaln(x_new, scale, shift, norm, w, b, 1e-6))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_ltx_block_views(kernel, device, dtype, per_token):
    """LTX-Video's block: `(shift, scale, gate) x 2` are views of one `[B, T, 6, D]` tensor
    (`scale_shift_table + temb`, unbound on dim 2), so their rows are strided, T = 1 per sample
    or T = S per token; the output head is a LayerNorm without affine, eps 1e-6."""
    D, Sq = 256, 5
    T = Sq if per_token else 1
    ada = (0.5 * torch.randn(B, T, 6, D, device=device)).to(dtype)
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = ada.unbind(dim=2)
    assert not scale_msa.is_contiguous()
    x = torch.randn(B, Sq, D, dtype=dtype, device=device)
    attn = torch.randn(B, Sq, D, dtype=dtype, device=device)
    h = kernel.adaln(x, scale_msa, shift_msa, norm="rms")
    assert_close(h, ref_adaln(x, scale_msa, shift_msa, "rms"))
    x_new, h2 = kernel.gated_residual_adaln(x, attn, gate_msa, scale_mlp, shift_mlp)
    assert_close(x_new, ref_residual(x, attn, gate_msa))
    assert_close(h2, ref_adaln(x_new, scale_mlp, shift_mlp, "rms"))
    out = kernel.adaln(x, scale_mlp, shift_mlp, norm="layer")
    assert_close(out, ref_adaln(x, scale_mlp, shift_mlp, "layer"))


@pytest.mark.parametrize("mkind", ["D", "sample", "token"])
@pytest.mark.parametrize("S", [1, 4, 6, 8, 64, 129])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rows_per_block(kernel, device, dtype, S, mkind):
    """Samples of every length against kernels that put several rows in a block: on CUDA the
    staged path stages a modulation row once for a block when all its rows share it (one [D]
    row; per sample when the block's rows divide the sample length), else once per row. Each
    row must still get its own sample's scale, shift and gate, the last block being partial."""
    Bq, D = 3, 512
    x = torch.randn(Bq, S, D, dtype=dtype, device=device)
    y = torch.randn(Bq, S, D, dtype=dtype, device=device)
    scale, shift, gate = (make_mod(mkind, (Bq, S), D, dtype, device) for _ in range(3))
    for norm in NORMS:
        check_adaln_and_gated(kernel, x, y, gate, scale, shift, norm)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_matches_unfused_model_math(kernel, device, dtype):
    """Against the modules a model runs unfused: LTX's block norm (diffusers RMSNorm without
    weight) and output head (nn.LayerNorm without affine), then `* (1 + scale) + shift`, and
    the gated residual `x + y * gate` before it. Eager 16-bit rounds after every op, the kernel
    once: twice the tolerance."""
    D = 512
    x = torch.randn(B, 7, D, dtype=dtype, device=device)
    yb = torch.randn(B, 7, D, dtype=dtype, device=device)
    gate, scale, shift = (0.5 * torch.randn(3, B, 1, D, device=device)).to(dtype)
    ln = torch.nn.LayerNorm(D, elementwise_affine=False, eps=1e-6)
    ref = ln(x) * (1 + scale) + shift
    assert_close(kernel.adaln(x, scale, shift, norm="layer"), ref.double(), scale=2)
    x_new, h = kernel.gated_residual_adaln(x, yb, gate, scale, shift)
    assert_close(x_new, (x + yb * gate).double(), scale=2)
    # The model's norm of the kernel's x_new: where eager's twice-rounded `x + y * gate` is an
    # ulp off the kernel's once-rounded one, h would differ by that ulp times (1 + scale).
    n = x_new.float() * torch.rsqrt(x_new.float().pow(2).mean(-1, keepdim=True) + 1e-6)
    h_ref = n.to(dtype) * (1 + scale) + shift
    assert_close(h, h_ref.double(), scale=2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_large_mean(kernel, device, dtype):
    """|mean| >> std: the variance from two passes (mean, then squared deviations) keeps its
    precision, where E[x^2] - E[x]^2 in fp32 cancels (1e6 + 1 - 1e6) and is off by percents.

    fp32, mean 1000 and std 1: fp32 itself knows the mean only to about 1000 * 2^-24 per
    rounding, a dozen roundings deep in the sum of 4096 values, so (x - mean) carries ~1e-4
    whatever the method: scale 100 (atol 1e-3), still 10x below the one-pass error. bf16 (its
    values near 1000 are multiples of 4): mean 64, std 4, the usual tolerance."""
    D = 4096
    if dtype == torch.float32:
        x, tol_scale = 1000.0 + torch.randn(B, S, D, device=device), 100
    else:
        x, tol_scale = (64.0 + 4 * torch.randn(B, S, D, device=device)).to(dtype), 1
    scale = torch.zeros(D, dtype=dtype, device=device)
    shift = torch.zeros(D, dtype=dtype, device=device)
    out = kernel.adaln(x, scale, shift, norm="layer")
    assert_close(out, ref_adaln(x, scale, shift, "layer"), scale=tol_scale)
    yb = torch.randn_like(x)
    x_new, h = kernel.gated_residual_adaln(x, yb, None, scale, shift, norm="layer")
    assert_close(h, ref_adaln(x_new, scale, shift, "layer"), scale=tol_scale)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("norm", NORMS)
def test_bias_allowed_with_either_norm(kernel, device, norm):
    """A bias is allowed with RMSNorm too: diffusers' `RMSNorm(bias=True)` adds one after its
    weight, before the modulation."""
    D = 64
    x = torch.randn(4, D, device=device)
    w, b = make_affine("wb", D, torch.float32, device)
    scale, shift = 0.5 * torch.randn(2, D, device=device)
    out = kernel.adaln(x, scale, shift, norm=norm, bias=b)
    assert_close(out, ref_adaln(x, scale, shift, norm, None, b))
    out = kernel.adaln(x, scale, shift, norm=norm, weight=w, bias=b)
    assert_close(out, ref_adaln(x, scale, shift, norm, w, b))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_outputs(kernel, device, dtype):
    """out and residual_out as row views of wider buffers: every element written, nothing
    outside."""
    D = 1024
    x = torch.randn(B, S, D, dtype=dtype, device=device)
    yb = torch.randn(B, S, D, dtype=dtype, device=device)
    gate, scale, shift = (0.5 * torch.randn(3, B, 1, D, device=device)).to(dtype)
    big_h = poisoned((B, S, D + 16), dtype, device)
    big_r = poisoned((B, S, D + 24), dtype, device)
    h, r = big_h[..., 8 : 8 + D], big_r[..., 16 : 16 + D]
    kernel.gated_residual_adaln(x, yb, gate, scale, shift, norm="layer", out=h, residual_out=r)
    assert_close(r, ref_residual(x, yb, gate))
    assert_close(h, ref_adaln(r, scale, shift, "layer"))
    for big, lo, hi in ((big_h, 8, 8 + D), (big_r, 16, 16 + D)):
        assert torch.isnan(big[..., :lo]).all() and torch.isnan(big[..., hi:]).all()
    big_h.fill_(float("nan"))
    kernel.adaln(x, scale, shift, out=h)
    assert_close(h, ref_adaln(x, scale, shift))
    assert torch.isnan(big_h[..., :8]).all() and torch.isnan(big_h[..., 8 + D :]).all()


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_two_level_rows_many(kernel, device, dtype, norm):
    """x, y and the outputs as `[S, B, D]` memory seen as `[B, S, D]` (rows at two strides),
    with enough rows for CUDA's grids beyond one wave (the staged path, whose row offsets take
    both levels; the existing two-level tests are one-wave grids), per-sample scale / shift and
    per-token gate."""
    Bq, Sq, D = 3, 1500, 2048
    x, y = (torch.randn(Sq, Bq, D, dtype=dtype, device=device).transpose(0, 1)
            for _ in range(2))
    scale, shift = (make_mod("sample", (Bq, Sq), D, dtype, device) for _ in range(2))
    gate = make_mod("token", (Bq, Sq), D, dtype, device)
    out = poisoned((Sq, Bq, D), dtype, device).transpose(0, 1)
    kernel.adaln(x, scale, shift, norm=norm, out=out)
    assert_close(out, ref_adaln(x, scale, shift, norm))
    x_new, h = kernel.gated_residual_adaln(x, y, gate, scale, shift, norm=norm)
    assert_close(x_new, ref_residual(x, y, gate))
    assert_close(h, ref_adaln(x_new, scale, shift, norm))


# (gate, scale / shift broadcast, their dtype, affine) for the dense path's test: the LTX cases
# (per-sample and per-token modulation, no affine), [D] rows with the affine, fp32 operands, and
# a `[1, S, D]` modulation (rows at `r % S`: not one RunBcast, so the launcher falls back to the
# other paths; still checked).
DENSE_CASES = [
    pytest.param("sample", "sample", "same", "none", id="ltx-sample"),
    pytest.param("token", "token", "same", "none", id="ltx-token"),
    pytest.param(None, "D", "fp32", "wb32", id="nogate-D-fp32-wb32"),
    pytest.param("D", "seq", "same", "w", id="gate_D-seq-w"),
]


@pytest.mark.parametrize("gkind,mkind,mdtype,akind", DENSE_CASES)
@pytest.mark.parametrize("D", [64, 1000, 2048, 4096, 5120])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_dense_rows_many(kernel, device, dtype, norm, D, gkind, mkind, mdtype, akind):
    """Contiguous x with enough rows for CUDA's grids of several waves, down the dense path (one
    vector a thread, adaln.cu) at the defaults on sm_90: rows of 8 to 640 vectors (D = 1000:
    lanes past the row's end; 5120: over its cap, the other paths), a row count no block size
    divides, every modulation form, the affine. Every output element written."""
    if device.type != "cuda":
        pytest.skip("CUDA: the dense path's grids (the CPU kernels have no such path)")
    Bq, Sq = 3, 1367
    x, y = (torch.randn(Bq, Sq, D, dtype=dtype, device=device) for _ in range(2))
    mdt = torch.float32 if mdtype == "fp32" else dtype

    def mod(kind):
        if kind == "seq":
            return (0.5 * torch.randn(1, Sq, D, device=device)).to(mdt)
        return make_mod(kind, (Bq, Sq), D, mdt, device)

    scale, shift = mod(mkind), mod(mkind)
    gate = mod(gkind) if gkind else None
    w, b = make_affine(akind, D, dtype, device)
    out = poisoned(x.shape, dtype, device)
    kernel.adaln(x, scale, shift, norm=norm, weight=w, bias=b, out=out)
    assert_close(out, ref_adaln(x, scale, shift, norm, w, b, 1e-6))
    res = poisoned(x.shape, dtype, device)
    x_new, h = kernel.gated_residual_adaln(x, y, gate, scale, shift, norm=norm, weight=w, bias=b,
                                           out=out, residual_out=res)
    assert_close(x_new, ref_residual(x, y, gate))
    assert torch.equal(kernel.gated_residual(x, y, gate if gate is not None else
                                             torch.ones(D, dtype=mdt, device=device)), x_new)
    assert_close(h, ref_adaln(x_new, scale, shift, norm, w, b, 1e-6))


@pytest.mark.parametrize("dtype", DTYPES)
def test_three_level_rows_and_4d(kernel, device, dtype):
    """x with rows at three strides (copied to contiguous rows, still correct), and a 4-d x
    `[B, H, S, D]` with scale `[B, 1, 1, D]` / `[1, H, S, D]`."""
    D = 64
    x3 = torch.randn(5, 3, 4, 2 * D, dtype=dtype, device=device)[..., :D].transpose(0, 1)
    y3 = torch.randn(3, 5, 4, D, dtype=dtype, device=device)
    scale = make_mod("token", (3, 5, 4), D, dtype, device)
    shift = make_mod("D", (3, 5, 4), D, dtype, device)
    assert_close(kernel.adaln(x3, scale, shift, norm="layer"),
                 ref_adaln(x3, scale, shift, "layer"))
    x_new, h = kernel.gated_residual_adaln(x3, y3, None, scale, shift)
    assert_close(x_new, ref_residual(x3, y3, None))
    assert_close(h, ref_adaln(x_new, scale, shift))
    x4 = torch.randn(2, 3, 5, D, dtype=dtype, device=device)
    s4 = (0.5 * torch.randn(2, 1, 1, D, device=device)).to(dtype)
    t4 = (0.5 * torch.randn(1, 3, 5, D, device=device)).to(dtype)
    assert_close(kernel.adaln(x4, s4, t4), ref_adaln(x4, s4, t4))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("shape", [(1, 2048), (2048,), (1, 1, 1), (0, 2048), (4, 0), (2, 0, 64)])
def test_edge_shapes(kernel, device, shape):
    D = shape[-1]
    x = torch.randn(shape, device=device)
    yb = torch.randn(shape, device=device)
    gate, scale, shift = torch.randn(3, D, device=device)
    h = kernel.adaln(x, scale, shift, norm="layer")
    x_new, h2 = kernel.gated_residual_adaln(x, yb, gate, scale, shift)
    assert h.shape == x.shape and x_new.shape == x.shape and h2.shape == x.shape
    if x.numel():
        assert_close(h, ref_adaln(x, scale, shift, "layer"))
        assert_close(x_new, ref_residual(x, yb, gate))
        assert_close(h2, ref_adaln(x_new, scale, shift))


def test_eps(kernel, device):
    x = 1e-3 * torch.randn(4, 256, device=device)
    scale, shift = 0.5 * torch.randn(2, 256, device=device)
    for norm in NORMS:
        for eps in (0.0, 1e-6, 1e-2):
            assert_close(kernel.adaln(x, scale, shift, norm=norm, eps=eps),
                         ref_adaln(x, scale, shift, norm, eps=eps))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("D", [32768, 49152, 65536])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_long_rows(kernel, device, dtype, D, norm):
    """Rows past the DESIGN.md sizes: on CUDA the row-cached kernels would need more registers
    than a block of 768-1024 threads has, and the launcher falls back to streaming the row."""
    x = torch.randn(2, D, dtype=dtype, device=device)
    yb = torch.randn(2, D, dtype=dtype, device=device)
    gate, scale, shift = (0.5 * torch.randn(3, 2, D, device=device)).to(dtype)
    check_adaln_and_gated(kernel, x, yb, gate, scale, shift, norm)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only: the real LTX size")
@pytest.mark.parametrize("per_token", [False, True])
def test_ltx_real_size(backend, per_token):
    """LTX-Video 2B at 49 frames 768x512 with CFG: x [2, 2688, 2048] bf16."""
    if backend != "cuda":
        pytest.skip("CUDA only")
    from conftest import load_kernel

    k = load_kernel("cuda")
    Bq, Sq, D = 2, 2688, 2048
    dt = torch.bfloat16
    T = Sq if per_token else 1
    ada = (0.5 * torch.randn(Bq, T, 6, D, device="cuda")).to(dt)
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = ada.unbind(dim=2)
    x = torch.randn(Bq, Sq, D, dtype=dt, device="cuda")
    attn = torch.randn(Bq, Sq, D, dtype=dt, device="cuda")
    out = poisoned(x.shape, dt, "cuda")
    k.adaln(x, scale_msa, shift_msa, out=out)
    assert_close(out, ref_adaln(x, scale_msa, shift_msa))
    res = poisoned(x.shape, dt, "cuda")
    x_new, h = k.gated_residual_adaln(x, attn, gate_msa, scale_mlp, shift_mlp, out=out,
                                      residual_out=res)
    assert_close(x_new, ref_residual(x, attn, gate_msa))
    assert_close(h, ref_adaln(x_new, scale_mlp, shift_mlp))
    assert torch.equal(k.gated_residual(x, attn, gate_msa), x_new)  # the attn1 residual
    k.adaln(x, scale_mlp, shift_mlp, norm="layer", out=out)  # the output head
    assert_close(out, ref_adaln(x, scale_mlp, shift_mlp, "layer"))


@pytest.mark.kernels_ci
def test_opcheck(kernel, device):
    for dtype in DTYPES:
        x = torch.randn(2, 3, 64, dtype=dtype, device=device)
        yb = torch.randn(2, 3, 64, dtype=dtype, device=device)
        scale, shift, gate = (0.5 * torch.randn(3, 2, 1, 64, device=device)).to(dtype)
        w, b = make_affine("wb32", 64, dtype, device)
        out, res = torch.empty_like(x), torch.empty_like(x)
        torch.library.opcheck(kernel.ops.adaln, (out, x, scale, shift, None, None, "rms", 1e-6))
        torch.library.opcheck(kernel.ops.adaln, (out, x, scale, shift, w, b, "layer", 1e-5))
        torch.library.opcheck(kernel.ops.gated_residual_adaln,
                              (out, res, x, yb, gate, scale, shift, None, None, "rms", 1e-6))
        torch.library.opcheck(kernel.ops.gated_residual_adaln,
                              (out, res, x, yb, None, scale, shift, w, b, "layer", 1e-6))
        torch.library.opcheck(kernel.ops.gated_residual, (out, x, yb, gate))
        gate32 = make_mod("token", (2, 3), 64, torch.float32, device)
        torch.library.opcheck(kernel.ops.gated_residual, (out, x, yb, gate32))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("norm", NORMS)
def test_compile(kernel, device, norm):
    """fullgraph (no graph break), dynamic batch and sequence without recompiling; the three
    ops, gated_residual also in place (out=x) on an intermediate."""
    D = 256
    dt = torch.bfloat16
    w = torch.randn(D, dtype=dt, device=device)

    def f(x, y, ada):
        shift, scale, gate = ada.unbind(dim=2)
        x_new, h = kernel.gated_residual_adaln(x * 2, y, gate, scale, shift, norm=norm, weight=w)
        r = kernel.gated_residual(x_new, y, gate)
        kernel.gated_residual(r, h, gate, out=r)
        return r, kernel.adaln(h, scale, shift, norm=norm) + 1

    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True, dynamic=True)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for b, s in ((2, 16), (3, 5), (5, 16), (8, 9)):
            x = torch.randn(b, s, D, dtype=dt, device=device)
            y = torch.randn(b, s, D, dtype=dt, device=device)
            ada = (0.5 * torch.randn(b, 1, 3, D, device=device)).to(dt)
            got, want = cf(x, y, ada), f(x, y, ada)
            assert_close(got[0], want[0].double())
            assert_close(got[1], want[1].double(), scale=2)  # the +1 rounds once more


@pytest.mark.kernels_ci
def test_bad_inputs(kernel, device):
    dt = torch.bfloat16
    D = 64
    x = torch.randn(2, 3, D, dtype=dt, device=device)
    yb = torch.randn(2, 3, D, dtype=dt, device=device)
    s = torch.randn(2, 1, D, dtype=dt, device=device)

    def raises(match, fn, *args, **kw):
        with pytest.raises(RuntimeError, match=match):
            fn(*args, **kw)

    adaln, gated = kernel.adaln, kernel.gated_residual_adaln
    # scale / shift / gate shapes that do not broadcast against x
    raises("scale", adaln, x, torch.randn(3, 1, D, dtype=dt, device=device), s)
    raises("scale", adaln, x, torch.randn(2, 3, D + 1, dtype=dt, device=device), s)
    raises("scale", adaln, x, torch.randn(1, 2, 3, D, dtype=dt, device=device), s)
    raises("shift", adaln, x, s, torch.randn(2, 2, D, dtype=dt, device=device))
    raises("gate", gated, x, yb, torch.randn(2, 4, D, dtype=dt, device=device), s, s)
    raises("scale", adaln, x, torch.randn(1, 2 * D, dtype=dt, device=device)[:, ::2], s)
    # dtype mixes
    raises("scale", adaln, x, s.half(), s.half())
    raises("shift", adaln, x, s, s.float())
    raises("gate", gated, x, yb, s.float(), s, s)
    raises("weight", adaln, x, s, s, weight=torch.randn(D, dtype=torch.half, device=device))
    raises("bias", adaln, x, s, s, weight=torch.randn(D, dtype=dt, device=device),
           bias=torch.randn(D, device=device))
    raises("weight", adaln, x, s, s, weight=torch.randn(D + 1, dtype=dt, device=device))
    raises("input", adaln, torch.ones(2, D, dtype=torch.int32, device=device),
           torch.zeros(D, device=device), torch.zeros(D, device=device))
    # norm, eps
    raises("norm", adaln, x, s, s, norm="group")
    raises("norm", gated, x, yb, None, s, s, norm="RMS")
    raises("eps", adaln, x, s, s, eps=-1.0)
    raises("eps", gated, x, yb, s, s, s, eps=-1e-6)
    # y
    raises("y", gated, x, torch.randn(2, 4, D, dtype=dt, device=device), s, s, s)
    raises("y", gated, x, yb.float(), s, s, s)
    raises("y", gated, x, torch.randn(2, 3, 2 * D, dtype=dt, device=device)[..., ::2], s, s, s)
    # outputs
    raises("out", adaln, x, s, s, out=torch.empty(2, 3, D, device=device))
    raises("out", adaln, x, s, s, out=torch.empty(2, 3, D + 1, dtype=dt, device=device))
    raises("out", adaln, x, s, s, out=torch.empty(1, D, dtype=dt, device=device).expand(6, D)
           .view(2, 3, D))
    raises("residual_out", gated, x, yb, s, s, s,
           residual_out=torch.empty(2, 3, D, device=device))
    shared = torch.empty_like(x)
    raises("residual_out", gated, x, yb, s, s, s, out=shared, residual_out=shared)
    # the last dim must be contiguous
    raises("input", adaln, torch.randn(D, 6, dtype=dt, device=device).t(), s[0, 0], s[0, 0])
    if device.type == "cuda":
        raises("scale", adaln, x, s.cpu(), s)
        raises("weight", adaln, x, s, s, weight=torch.randn(D, dtype=dt))

    # gated_residual: x, y and gate as gated_residual_adaln checks them, the gate's dtype x's or
    # float32; out may be x itself and share memory with nothing else
    gr = kernel.gated_residual
    raises("input: dtype", gr, torch.ones(2, D, dtype=torch.int32, device=device), yb[0], s[0])
    raises("input: the last dimension", gr, torch.randn(D, 6, dtype=dt, device=device).t(),
           torch.randn(6, D, dtype=dt, device=device), s[0, 0])
    raises("y: expected shape", gr, x, torch.randn(2, 4, D, dtype=dt, device=device), s)
    raises("y: expected dtype", gr, x, yb.float(), s)
    raises("gate: shape", gr, x, yb, torch.randn(2, 4, D, dtype=dt, device=device))
    raises("gate: last dim", gr, x, yb, torch.randn(2, 1, D + 1, dtype=dt, device=device))
    raises("gate: expected 1 to 3 dims", gr, x, yb,
           torch.randn(1, 2, 3, D, dtype=dt, device=device))
    raises("gate: dtype must match input", gr, x, yb, s.half())
    raises("gate: the last dimension", gr, x, yb,
           torch.randn(1, 2 * D, dtype=dt, device=device)[:, ::2])
    raises("out: expected dtype", gr, x, yb, s, out=torch.empty(2, 3, D, device=device))
    raises("out: expected shape", gr, x, yb, s,
           out=torch.empty(2, 3, D + 1, dtype=dt, device=device))
    raises("out: is written", gr, x, yb, s,
           out=torch.empty(1, D, dtype=dt, device=device).expand(6, D).view(2, 3, D))
    raises("out: must not share memory with y", gr, x, yb, s, out=yb)
    per_token = torch.randn(2, 3, D, dtype=dt, device=device)
    raises("out: must not share memory with gate", gr, x, yb, per_token, out=per_token)
    rows = torch.randn(4, D, dtype=dt, device=device)  # out one row behind x: not in place
    raises("out: must not share memory with input", gr, rows[:3], yb[0], s[0], out=rows[1:])
    if device.type == "cuda":
        raises("gate: expected a tensor on", gr, x, yb, s.cpu())
        raises("y: expected a tensor on", gr, x, yb.cpu(), s)
        raises("out: expected a tensor on", gr, x, yb, s, out=torch.empty_like(x, device="cpu"))


# ---- gated_residual -----------------------------------------------------------------------


def residual_via_adaln(kernel, x, y, gate):
    """gated_residual_adaln's x_new for the same x, y and gate (gate as scale and shift too:
    they must have its dtype)."""
    return kernel.gated_residual_adaln(x, y, gate, gate, gate)[0]


@pytest.mark.parametrize("gdtype", ["same", "fp32"])
@pytest.mark.parametrize("gkind", ["D", "sample", "token"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_residual_reference(kernel, device, dtype, D, layout, gkind, gdtype):
    """x, y and out in the layout (misaligned: the scalar path), against float64, and bit for
    bit gated_residual_adaln's x_new."""
    x = make_input((B, S, D), dtype, device, layout)
    y = make_input((B, S, D), dtype, device, layout)
    gate = make_mod(gkind, (B, S), D, torch.float32 if gdtype == "fp32" else dtype, device)
    out = poisoned((B, S, D), dtype, device, layout)
    assert kernel.gated_residual(x, y, gate, out=out) is out
    assert_close(out, ref_residual(x, y, gate))
    assert torch.equal(out, residual_via_adaln(kernel, x, y, gate))
    got = kernel.gated_residual(x, y, gate)  # allocated: contiguous, like x
    assert got.is_contiguous() and got.dtype == dtype and torch.equal(got, out)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("gkind", ["D", "sample", "token"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_residual_in_place(kernel, device, dtype, gkind, layout):
    """out=x: x becomes x + y * gate (a strided or misaligned x too), the same bits as into a
    new tensor."""
    D = 776  # 97 16-byte vectors of 16-bit values
    x = make_input((B, S, D), dtype, device, layout)
    y = torch.randn(B, S, D, dtype=dtype, device=device)
    gate = make_mod(gkind, (B, S), D, dtype, device)
    want = kernel.gated_residual(x, y, gate)
    assert kernel.gated_residual(x, y, gate, out=x) is x
    assert torch.equal(x, want)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_residual_ltx_block_views(kernel, device, dtype, per_token):
    """LTX-Video's attn1 residual `x + attn * gate_msa`, gate_msa a strided view of the block's
    `[B, T, 6, D]` modulation (T = 1 per sample, S per token); against the float64 reference
    and the torch formula LTX writes (16-bit eager rounds the product and the sum: twice the
    tolerance)."""
    D, Sq = 256, 5
    T = Sq if per_token else 1
    ada = (0.5 * torch.randn(B, T, 6, D, device=device)).to(dtype)
    gate_msa = ada.unbind(dim=2)[2]
    assert not gate_msa.is_contiguous()
    x = torch.randn(B, Sq, D, dtype=dtype, device=device)
    attn = torch.randn(B, Sq, D, dtype=dtype, device=device)
    out = kernel.gated_residual(x, attn, gate_msa)
    assert_close(out, ref_residual(x, attn, gate_msa))
    assert_close(out, (x + attn * gate_msa).double(), scale=2)
    assert torch.equal(out, residual_via_adaln(kernel, x, attn, gate_msa))


@pytest.mark.parametrize("form", ["tokens_shared", "tokens_2d", "sample_expanded",
                                  "sample_strided", "token_strided"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_residual_gate_forms(kernel, device, dtype, form):
    """Gates of every broadcast form against the float64 reference, on dense x, y and out (the
    flat kernel): a row per token shared by the batch (`[1, S, D]`, `[S, D]`: two levels, the
    general FastBcast offset) and per-sample or per-token rows at strides (a RunBcast offset
    where it has that form: a row per run of rows at one stride)."""
    D = 256
    x = torch.randn(B, S, D, dtype=dtype, device=device)
    y = torch.randn(B, S, D, dtype=dtype, device=device)
    if form == "tokens_shared":
        gate = torch.randn(1, S, D, dtype=dtype, device=device)
    elif form == "tokens_2d":
        gate = torch.randn(S, D, dtype=dtype, device=device)
    elif form == "sample_expanded":
        gate = torch.randn(B, 1, D, dtype=dtype, device=device).expand(B, S, D)
    elif form == "sample_strided":
        gate = torch.randn(B, 1, 3, D, dtype=dtype, device=device)[:, :, 1]
    else:
        gate = torch.randn(B, S, 3, D, dtype=dtype, device=device)[:, :, 2]
    out = kernel.gated_residual(x, y, gate)
    assert_close(out, ref_residual(x, y, gate))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("shape", [(1, 2048), (2048,), (1, 1, 1), (0, 2048), (4, 0), (2, 0, 64)])
def test_gated_residual_edge_shapes(kernel, device, shape):
    x, y = torch.randn(shape, device=device), torch.randn(shape, device=device)
    gate = torch.randn(shape[-1], device=device)
    out = kernel.gated_residual(x, y, gate)
    assert out.shape == x.shape
    if x.numel():
        assert_close(out, ref_residual(x, y, gate))


# ---- layers (diffusers) ---------------------------------------------------------------------


class _CountAdaln(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts calls of this package's adaln op, to tell the kernel path from a fallback."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.__name__.split(".")[0] == "adaln" and "ltx_kernels" in func.namespace:
            self.calls += 1
        return func(*args, **(kwargs or {}))


def _with_norm_affine(m, dtype):
    """Give the module's norm a random affine (when it has one) in `dtype`."""
    with torch.no_grad():
        if getattr(m.norm, "weight", None) is not None:
            m.norm.weight.data = (1 + 0.3 * torch.randn_like(m.norm.weight)).to(dtype)
        if getattr(m.norm, "bias", None) is not None:
            m.norm.bias.data = (0.3 * torch.randn_like(m.norm.bias)).to(dtype)
    return m


def _layer_cases(D):
    """The diffusers modules the layers replace, in the configurations models use (imported
    here, not at collection, so that the op tests run without diffusers)."""
    from diffusers.models import normalization as dn

    return {
        "zero": lambda: dn.AdaLayerNormZero(D),
        "zero_fp32ln": lambda: dn.AdaLayerNormZero(D, norm_type="fp32_layer_norm"),
        "zero_classes": lambda: dn.AdaLayerNormZero(D, num_embeddings=10),
        "zero_single": lambda: dn.AdaLayerNormZeroSingle(D),
        "cont_ln": lambda: dn.AdaLayerNormContinuous(D, 32, elementwise_affine=False, eps=1e-6),
        "cont_ln_affine": lambda: dn.AdaLayerNormContinuous(D, 32, eps=1e-5),
        "cont_ln_weight": lambda: dn.AdaLayerNormContinuous(D, 32, bias=False),
        "cont_rms": lambda: dn.AdaLayerNormContinuous(D, 32, elementwise_affine=False, eps=1e-6,
                                                      norm_type="rms_norm"),
        "cont_rms_weight": lambda: dn.AdaLayerNormContinuous(D, 32, norm_type="rms_norm"),
    }


LAYER_OF = {"zero": "AdaLayerNormZero", "zero_fp32ln": "AdaLayerNormZero",
            "zero_classes": "AdaLayerNormZero", "zero_single": "AdaLayerNormZeroSingle"}


def _layer_inputs(case, B, D, dtype, device):
    """The forward's arguments after x, as the models pass them."""
    if case.startswith("cont"):
        return (torch.randn(B, 32, dtype=dtype, device=device),), {}
    if case == "zero_classes":
        t = torch.randint(0, 1000, (B,), device=device)
        labels = torch.randint(0, 10, (B,), device=device)
        return (t, labels), {"hidden_dtype": dtype}
    return (), {"emb": torch.randn(B, D, dtype=dtype, device=device)}


@pytest.mark.kernels_ci
@pytest.mark.parametrize("case", ["zero", "zero_fp32ln", "zero_classes", "zero_single", "cont_ln",
                                  "cont_ln_affine", "cont_ln_weight", "cont_rms",
                                  "cont_rms_weight"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_layers_match_diffusers(kernel, device, dtype, case):
    D = 256
    # eval(): DiT's label embedding drops class labels at random in training mode.
    m = _with_norm_affine(_layer_cases(D)[case]().to(device=device, dtype=dtype), dtype).eval()
    x = torch.randn(B, 9, D, dtype=dtype, device=device)
    args, kwargs = _layer_inputs(case, B, D, dtype, device)
    layer = getattr(kernel.layers, LAYER_OF.get(case, "AdaLayerNormContinuous"))
    ref = m(x, *args, **kwargs)
    with _CountAdaln() as count:
        got = layer.forward(m, x, *args, **kwargs)
    assert count.calls == 1, "the kernel path was not taken"
    ref, got = (ref, got) if isinstance(ref, tuple) else ((ref,), (got,))
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.dtype == r.dtype and g.shape == r.shape
        # Eager 16-bit rounds after the norm, the product and the sum; the kernel once.
        assert_close(g, r.double(), dtype, scale=1 if dtype == torch.float32 else 2)


@pytest.mark.kernels_ci
def test_layers_fall_back_where_the_kernel_does_not_apply(kernel, device):
    """Where the module's result has another dtype than x (diffusers' RMSNorm with an fp32
    weight on bf16 activations returns fp32, and the modulation keeps it), the layer runs the
    module's own formula: the same values and dtype, no kernel call."""
    from diffusers.models.normalization import AdaLayerNormContinuous

    D = 64
    m = AdaLayerNormContinuous(D, 32, norm_type="rms_norm").to(device)
    m.linear.to(torch.bfloat16)
    x = torch.randn(2, 5, D, dtype=torch.bfloat16, device=device)
    c = torch.randn(2, 32, dtype=torch.bfloat16, device=device)
    ref = m(x, c)
    with _CountAdaln() as count:
        got = kernel.layers.AdaLayerNormContinuous.forward(m, x, c)
    assert count.calls == 0
    assert got.dtype == ref.dtype == torch.float32
    assert torch.equal(got, ref)


@pytest.mark.kernels_ci
def test_layers_through_kernelize(backend):
    """The layers as `kernels.kernelize` installs them: attached to the diffusers classes with
    `replace_kernel_forward_from_hub`, mapped to this checkout's build, validated by kernels
    (no state, the forward signatures of the classes they replace)."""
    from diffusers.models import normalization as dn
    from kernels import (LocalLayerRepository, Mode, kernelize, replace_kernel_forward_from_hub,
                         use_kernel_mapping)

    from conftest import load_kernel

    names = ["AdaLayerNormZero", "AdaLayerNormZeroSingle", "AdaLayerNormContinuous"]
    for name in names:
        replace_kernel_forward_from_hub(getattr(dn, name), name)
    # The exact build variant of this backend (on a CUDA torch the checkout's default variant
    # would be the CUDA one, also for the CPU backend).
    variant = Path(load_kernel(backend).__file__).parent
    mapping = {name: {backend: LocalLayerRepository(repo_path=variant, layer_name=name)}
               for name in names}
    D = 128
    model = torch.nn.ModuleList(
        [dn.AdaLayerNormZero(D), dn.AdaLayerNormZeroSingle(D),
         dn.AdaLayerNormContinuous(D, 32, elementwise_affine=False, eps=1e-6)]
    ).to(backend)
    x = torch.randn(2, 6, D, device=backend)
    emb, c = torch.randn(2, D, device=backend), torch.randn(2, 32, device=backend)
    ref = (model[0](x, emb=emb), model[1](x, emb=emb), (model[2](x, c),))
    with use_kernel_mapping(mapping):
        kernelize(model, mode=Mode.INFERENCE, device=backend, use_fallback=False)
    for mod, name in zip(model, names):
        assert mod.forward.__func__.__qualname__ == f"{name}.forward"
        assert mod.forward.__func__ is not getattr(dn, name).forward
    with _CountAdaln() as count:
        got = (model[0](x, emb=emb), model[1](x, emb=emb), (model[2](x, c),))
    assert count.calls == 3
    for g, r in zip(got, ref):
        for gi, ri in zip(g, r):
            assert_close(gi, ri.double())
