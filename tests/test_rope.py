"""rope, rope_qk, rms_norm_rope and rms_norm_rope_qk: against float64 references on every
backend, dtype, layout, pair layout and the DESIGN.md shape list; each target model's real
layout and rope tables (transformers LLaMA, diffusers LTX-Video and FLUX); partial rotary;
broadcast cos / sin; opcheck; torch.compile; bad inputs; the transformers layer, through
kernelize."""

from pathlib import Path

import pytest
import torch

from conftest import (DTYPES, HAS_CUDA, LAYOUTS, assert_close, make_input, poisoned,
                      restore_transformers_kernel_funcs)

# DESIGN.md's hidden sizes; D = 1 cannot hold a pair (test_bad_inputs covers R > D).
HIDDEN_SIZES = [2, 7, 8, 768, 769, 2048, 3072, 5120, 5125, 8192, 16384]
WEIGHTS = ["none", "same", "fp32"]
PAIRS = [pytest.param(True, id="interleaved"), pytest.param(False, id="split")]
TABLE_DTYPES = ["fp32", "same"]


# ---- references ------------------------------------------------------------------------------


def ref_rope(x, cos, sin, interleaved):
    """float64: the first R = cos.shape[-1] elements rotated, the rest copied."""
    xd, c, s = x.double(), cos.double(), sin.double()
    R = c.shape[-1]
    xr, tail = xd[..., :R], xd[..., R:]
    if interleaved:  # LTX / FLUX apply_rotary_emb: stack([-x_imag, x_real])
        rot = torch.stack([-xr[..., 1::2], xr[..., 0::2]], dim=-1).flatten(-2)
    else:  # transformers rotate_half
        rot = torch.cat([-xr[..., R // 2 :], xr[..., : R // 2]], dim=-1)
    y = xr * c + rot * s
    return torch.cat([y, tail.expand(*y.shape[:-1], tail.shape[-1])], dim=-1)


def ref_rms_norm_rope(x, weight, cos, sin, eps, interleaved, num_heads=None):
    """float64 RMSNorm (over the last dim, or each head) then RoPE, no rounding in between."""
    xd = x.double()
    if num_heads is not None:
        xd = xd.unflatten(-1, (num_heads, -1))
    n = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        n = n * weight.double()
    return ref_rope(n, cos, sin, interleaved).reshape(x.shape)


def tables(shape, dtype, device, kind="fp32"):
    """cos / sin of random angles: values the kernels must use position by position (models
    repeat them per pair; random ones catch a pair using its partner's entry)."""
    theta = 4 * torch.randn(shape, device=device)
    tdt = torch.float32 if kind == "fp32" else dtype
    return theta.cos().to(tdt), theta.sin().to(tdt)


def make_weight(kind, D, dtype, device):
    if kind == "none":
        return None
    wdt = torch.float32 if kind == "fp32" else dtype
    return (1.0 + 0.5 * torch.randn(D, device=device)).to(wdt)


def rotary_dim(D):
    return D - D % 2


# ---- rope ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_reference(kernel, device, dtype, D, interleaved, layout):
    """x [B, S, D] with per-token fp32 tables [B, S, R] (LTX's layout); R = D, or D - 1 when D
    is odd (one element passes through)."""
    x = make_input((2, 3, D), dtype, device, layout)
    cos, sin = tables((2, 3, rotary_dim(D)), dtype, device)
    out = poisoned(x.shape, dtype, device)
    y = kernel.rope(x, cos, sin, interleaved=interleaved, out=out)
    assert y is out
    assert_close(y, ref_rope(x, cos, sin, interleaved))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("tkind", TABLE_DTYPES)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("D", [8, 769, 2048])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_table_dtypes(kernel, device, dtype, D, interleaved, tkind):
    """cos / sin in float32 or in x's dtype (transformers casts them to x's dtype)."""
    x = torch.randn(4, 3, D, dtype=dtype, device=device)
    cos, sin = tables((4, 1, rotary_dim(D)), dtype, device, tkind)
    out = poisoned(x.shape, dtype, device)
    kernel.rope(x, cos, sin, interleaved=interleaved, out=out)
    assert_close(out, ref_rope(x, cos, sin, interleaved))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D,R", [(64, 2), (64, 16), (64, 48), (64, 62), (80, 32), (128, 64),
                                 (7, 4), (9, 2), (256, 200), (2048, 1024)])
def test_rope_partial(kernel, device, dtype, D, R, interleaved):
    """Partial rotary (GPT-NeoX / Phi style): the first R elements rotate, the rest copy.
    R values that do and do not allow the vector path."""
    x = make_input((2, 4, 3, D), dtype, device)
    cos, sin = tables((2, 1, 3, R), dtype, device)
    out = poisoned(x.shape, dtype, device)
    kernel.rope(x, cos, sin, interleaved=interleaved, out=out)
    assert_close(out, ref_rope(x, cos, sin, interleaved))
    assert torch.equal(out[..., R:], x[..., R:]), "pass-through elements must be copied exactly"


@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "xshape,tshape",
    [
        ((2, 4, 5, 64), (2, 1, 5, 64)),  # transformers: [B, H, S, D], cos [B, 1, S, D]
        ((2, 5, 4, 64), (2, 5, 1, 64)),  # FLUX per head, [B, S, H, D], cos [B, S, 1, D]
        ((2, 5, 4, 64), (5, 1, 64)),  # FLUX: cos [S, 1, D], shared by the batch
        ((2, 5, 4, 64), (64,)),  # one table row for every row
        ((2, 5, 4, 64), (1, 4, 64)),  # per head only
        ((3, 2, 5, 4, 32), (3, 1, 5, 1, 32)),  # 5-d, two broadcast dims
        ((2, 5, 4 * 64), (2, 5, 4 * 64)),  # LTX: [B, S, H*D] across heads
        ((1, 1, 1, 128), (1, 1, 128)),  # one row
    ],
)
def test_rope_broadcast(kernel, device, dtype, xshape, tshape, interleaved):
    x = torch.randn(xshape, dtype=dtype, device=device)
    cos, sin = tables(tshape, dtype, device)
    out = poisoned(x.shape, dtype, device)
    kernel.rope(x, cos, sin, interleaved=interleaved, out=out)
    assert_close(out, ref_rope(x, cos, sin, interleaved))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_strided_tables(kernel, device, dtype, interleaved):
    """cos / sin as views: positions sliced out of a longer table (row stride > R), and sin
    with other strides than cos (a broadcast `expand`), so their offsets differ."""
    B, H, S, D = 2, 3, 6, 64
    x = torch.randn(B, H, S, D, dtype=dtype, device=device)
    cos_full, sin_full = tables((B, 1, 2 * S, D + 16), dtype, device)
    cos, sin = cos_full[:, :, 3 : 3 + S, 8 : 8 + D], sin_full[:, :, 3 : 3 + S, 8 : 8 + D]
    out = poisoned(x.shape, dtype, device)
    kernel.rope(x, cos, sin, interleaved=interleaved, out=out)
    assert_close(out, ref_rope(x, cos, sin, interleaved))
    sin_b = sin_full[:1, :, :S, :D].expand(B, 1, S, D)  # stride 0 over the batch, cos is not
    kernel.rope(x, cos, sin_b, interleaved=interleaved, out=out)
    assert_close(out, ref_rope(x, cos, sin_b, interleaved))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_strided_out(kernel, device, dtype):
    x = torch.randn(9, 128, dtype=dtype, device=device)
    cos, sin = tables((9, 128), dtype, device)
    big = poisoned((9, 144), dtype, device)
    out = big[:, 8:136]
    kernel.rope(x, cos, sin, interleaved=False, out=out)
    assert_close(out, ref_rope(x, cos, sin, False))
    assert torch.isnan(big[:, :8]).all() and torch.isnan(big[:, 136:]).all(), "wrote outside out"


@pytest.mark.kernels_ci
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_qk_gqa(kernel, device, dtype, interleaved):
    """q and k with different head counts, both views of one fused QKV projection, transposed
    to [B, H, S, D] (three strided row levels each); one launch."""
    B, S, Hq, Hk, D = 2, 7, 8, 2, 64
    qkv = torch.randn(B, S, (Hq + 2 * Hk) * D, dtype=dtype, device=device)
    q = qkv[..., : Hq * D].view(B, S, Hq, D).transpose(1, 2)
    k = qkv[..., Hq * D : (Hq + Hk) * D].view(B, S, Hk, D).transpose(1, 2)
    cos, sin = tables((B, 1, S, D), dtype, device, "same")
    q_out, k_out = poisoned(q.shape, dtype, device), poisoned(k.shape, dtype, device)
    qo, ko = kernel.rope_qk(q, k, cos, sin, interleaved=interleaved, q_out=q_out, k_out=k_out)
    assert qo is q_out and ko is k_out
    assert_close(q_out, ref_rope(q, cos, sin, interleaved))
    assert_close(k_out, ref_rope(k, cos, sin, interleaved))
    # Default outputs, and an odd head dim with partial rotary (scalar path).
    q7 = torch.randn(3, 4, 7, dtype=dtype, device=device)
    k7 = torch.randn(3, 2, 7, dtype=dtype, device=device)
    c7, s7 = tables((3, 1, 6), dtype, device)
    qo, ko = kernel.rope_qk(q7, k7, c7, s7, interleaved=interleaved)
    assert_close(qo, ref_rope(q7, c7, s7, interleaved))
    assert_close(ko, ref_rope(k7, c7, s7, interleaved))


@pytest.mark.parametrize("tkind", TABLE_DTYPES)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "B,S,Hq,Hk,D,R,layout",
    [
        (1, 4500, 7, 3, 128, 128, "qkv"),  # many tokens: several heads per thread, a remainder
        (2, 700, 32, 8, 128, 128, "qkv"),  # LLaMA's GQA, two batches
        (1, 5, 32, 8, 128, 128, "qkv"),  # few tokens: one head per thread
        (1, 9000, 4, 4, 64, 32, "bhsd"),  # partial rotary, contiguous [B, H, S, D]
        (2, 8000, 3, 1, 80, 80, "bshd"),  # [B, S, H, D] with cos [B, S, 1, D] (FLUX-like)
        (2, 33, 3, 1, 80, 80, "bshd"),  # few tokens (CUDA: the rows path)
        (1, 3000, 2, 2, 256, 128, "bhsd"),  # items past R copied
        # a tail of one 16-byte vector past R (16-bit x): the last split-halves item holds one
        # vector, whose partner position is the row's end (enough tokens for the heads path)
        (1, 9000, 4, 2, 72, 64, "bhsd"),
        (2, 4500, 4, 2, 72, 64, "qkv"),
    ],
)
def test_rope_qk_heads(kernel, device, dtype, B, S, Hq, Hk, D, R, layout, interleaved, tkind):
    """cos / sin broadcast over one head dim: on CUDA the flat path (transposed q / k views in
    memory order), and under the knob test rope-flat-off (test_stage_knobs.py) the heads path,
    which loads each table item once per token and walks the heads of q and k. Head counts
    that leave a remainder of the heads a thread takes, token counts on both sides of its
    heads-per-thread choice, partial rotary, each layout of the head dim, both table dtypes,
    and in place (out is x)."""
    if layout == "qkv":  # transposed views of one fused projection: [B, H, S, D]
        qkv = torch.randn(B, S, (Hq + 2 * Hk) * D, dtype=dtype, device=device)
        q = qkv[..., : Hq * D].view(B, S, Hq, D).transpose(1, 2)
        k = qkv[..., Hq * D : (Hq + Hk) * D].view(B, S, Hk, D).transpose(1, 2)
        tshape = (B, 1, S, R)
    elif layout == "bhsd":
        q = torch.randn(B, Hq, S, D, dtype=dtype, device=device)
        k = torch.randn(B, Hk, S, D, dtype=dtype, device=device)
        tshape = (B, 1, S, R)
    else:  # bshd
        q = torch.randn(B, S, Hq, D, dtype=dtype, device=device)
        k = torch.randn(B, S, Hk, D, dtype=dtype, device=device)
        tshape = (B, S, 1, R)
    cos, sin = tables(tshape, dtype, device, tkind)
    q_ref, k_ref = ref_rope(q, cos, sin, interleaved), ref_rope(k, cos, sin, interleaved)
    q_out, k_out = poisoned(q.shape, dtype, device), poisoned(k.shape, dtype, device)
    kernel.rope_qk(q, k, cos, sin, interleaved=interleaved, q_out=q_out, k_out=k_out)
    assert_close(q_out, q_ref)
    assert_close(k_out, k_ref)
    y = kernel.rope(k, cos, sin, interleaved=interleaved)
    assert_close(y, k_ref)
    kernel.rope_qk(q, k, cos, sin, interleaved=interleaved, q_out=q, k_out=k)  # in place
    assert_close(q, q_ref)
    assert_close(k, k_ref)


def permuted(shape, mem_order, dtype, device, fill=None):
    """A tensor of logical `shape` whose memory holds its dims in `mem_order` (outermost first;
    the last dim stays innermost), e.g. [B, H, S, D] over memory [B, S, H, D]."""
    base = torch.randn([shape[d] for d in mem_order], dtype=dtype, device=device)
    if fill is not None:
        base.fill_(fill)
    return base.permute([mem_order.index(d) for d in range(len(shape))])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(12))
def test_rope_qk_random_views(kernel, device, dtype, seed):
    """q, k and their outputs [B, H, S, D] with leading dims in random memory orders (CUDA: the
    flat path walks rows in x's memory order where q and k share it, permuting out and the
    tables alike), tables broadcast over a random subset of B, H and S in either dtype,
    partial rotary, a pass-through tail of one vector, GQA head counts, given and default
    outputs, both pair layouts."""
    g = torch.Generator().manual_seed(seed)

    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=g))]

    B, S, Hq = pick([1, 2]), pick([3, 17, 40]), pick([1, 4])
    Hk = pick([1, Hq])
    D, R = pick([(16, 16), (64, 32), (72, 64), (128, 128), (136, 128)])
    orders = [[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 2, 3], [2, 0, 1, 3]]
    q_order = pick(orders)
    k_order = q_order if pick([True, False]) else pick(orders)
    q = permuted((B, Hq, S, D), q_order, dtype, device)
    k = permuted((B, Hk, S, D), k_order, dtype, device)
    tshape = [pick([1, B]), 1, pick([1, S]), R]
    if tshape[0] == 1 and tshape[2] == 1:
        tshape[2] = S
    cos, sin = tables(tuple(tshape), dtype, device, pick(["fp32", "same"]))
    interleaved = pick([True, False])
    q_ref, k_ref = ref_rope(q, cos, sin, interleaved), ref_rope(k, cos, sin, interleaved)
    if pick([True, False]):  # outputs in another memory order
        q_out = permuted(q.shape, pick(orders), dtype, device, fill=float("nan"))
        k_out = permuted(k.shape, pick(orders), dtype, device, fill=float("nan"))
        kernel.rope_qk(q, k, cos, sin, interleaved=interleaved, q_out=q_out, k_out=k_out)
    else:
        q_out, k_out = kernel.rope_qk(q, k, cos, sin, interleaved=interleaved)
    assert_close(q_out, q_ref)
    assert_close(k_out, k_ref)
    assert_close(kernel.rope(k, cos, sin, interleaved=interleaved), k_ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_qk_heads_long_rows(kernel, device, dtype):
    """Head dim 1024 (64-128 items a row on the CUDA vector path) with 32 heads over 300
    tokens: one item a thread on the flat path; on the heads path (rope-flat-off) as many
    threads per token as a block may take; fp32 tables (the instance with the most
    registers)."""
    B, S, H, D = 1, 300, 16, 1024
    q = torch.randn(B, H, S, D, dtype=dtype, device=device)
    k = torch.randn(B, H, S, D, dtype=dtype, device=device)
    cos, sin = tables((B, 1, S, D), dtype, device, "fp32")
    qo, ko = kernel.rope_qk(q, k, cos, sin, interleaved=False)
    assert_close(qo, ref_rope(q, cos, sin, False))
    assert_close(ko, ref_rope(k, cos, sin, False))


@pytest.mark.kernels_ci
def test_rope_empty(kernel, device):
    x = torch.randn(0, 4, 64, device=device)
    cos, sin = tables((64,), torch.float32, device)
    assert kernel.rope(x, cos, sin, interleaved=True).shape == x.shape
    y = kernel.rms_norm_rope(x, None, cos, sin, 1e-6, interleaved=False)
    assert y.shape == x.shape
    k = torch.randn(2, 64, device=device)
    qo, ko = kernel.rope_qk(x, k, cos, sin, interleaved=False)
    assert qo.shape == x.shape
    assert_close(ko, ref_rope(k, cos, sin, False))


# ---- rope in each model's own layout ---------------------------------------------------------


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_llama_layout(kernel, device, dtype):
    """transformers LLaMA: LlamaRotaryEmbedding's cos / sin [B, S, D] in x's dtype, q / k
    [B, H, S, D] transposed views, apply_rotary_pos_emb with unsqueeze_dim=1."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    cfg = LlamaConfig(hidden_size=512, num_attention_heads=4, num_key_value_heads=2)
    B, S, D = 2, 9, 128
    rot = LlamaRotaryEmbedding(cfg).to(device)
    h = torch.randn(B, S, 512, dtype=dtype, device=device)
    pos = torch.arange(3, 3 + S, device=device)[None].expand(B, S)
    cos, sin = rot(h, pos)
    q = torch.randn(B, S, 4, D, dtype=dtype, device=device).transpose(1, 2)
    k = torch.randn(B, S, 2, D, dtype=dtype, device=device).transpose(1, 2)
    qo, ko = kernel.rope_qk(q, k, cos.unsqueeze(1), sin.unsqueeze(1), interleaved=False)
    assert_close(qo, ref_rope(q, cos.unsqueeze(1), sin.unsqueeze(1), False))
    assert_close(ko, ref_rope(k, cos.unsqueeze(1), sin.unsqueeze(1), False))
    # The model's own function rounds q*cos, rotate_half(q)*sin and their sum: 2x tolerance.
    # The class's forward, not the instance's: kernelize (test_models) replaces the latter
    # process-wide.
    q_ref, k_ref = type(apply_rotary_pos_emb).forward(apply_rotary_pos_emb, q, k, cos, sin)
    assert_close(qo, q_ref.double(), scale=2)
    assert_close(ko, k_ref.double(), scale=2)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("fn", ["rope", "rope_qk", "rms_norm_rope", "rms_norm_rope_qk"])
@pytest.mark.parametrize("B", [1, 2])
def test_rope_default_out_layout(kernel, device, fn, B):
    """Default outputs keep a transformers q's memory order ([B, H, S, D] viewed from
    [B, S, H, D]; rows in one level for B = 1, three for B = 2), as the eager formula's output
    does, so that SDPA's output needs no copy back to [B, S, H, D]. Values as the reference."""
    S, H, D = 5, 4, 64
    q = torch.randn(B, S, H, D, device=device).transpose(1, 2)
    cos, sin = tables((B, 1, S, D), torch.float32, device)
    want = (q * cos).stride()  # TensorIterator keeps q's order
    if fn == "rope":
        outs = [kernel.rope(q, cos, sin, interleaved=False)]
        refs = [ref_rope(q, cos, sin, False)]
    elif fn == "rope_qk":
        outs = list(kernel.rope_qk(q, q, cos, sin, interleaved=False))
        refs = [ref_rope(q, cos, sin, False)] * 2
    elif fn == "rms_norm_rope":
        outs = [kernel.rms_norm_rope(q, None, cos, sin, 1e-6, interleaved=False,
                                     per_head=True)]
        refs = [ref_rms_norm_rope(q, None, cos, sin, 1e-6, False)]
    else:
        outs = list(kernel.rms_norm_rope_qk(q, q, None, None, cos, sin, 1e-6,
                                            interleaved=False, per_head=True))
        refs = [ref_rms_norm_rope(q, None, cos, sin, 1e-6, False)] * 2
    for out, ref in zip(outs, refs):
        assert out.stride() == want
        assert_close(out, ref)


@pytest.mark.kernels_ci
def test_rope_default_out_beyond_four_levels_is_contiguous(kernel, device):
    """A dense permutation whose rows need five strided levels (more than the rope kernels
    address): the input is read through a contiguous copy and the default output is
    contiguous, with the reference's values."""
    x = torch.randn(2, 3, 2, 3, 2, 8, device=device).permute(4, 3, 2, 1, 0, 5)
    cos, sin = tables((8,), torch.float32, device)
    out = kernel.rope(x, cos, sin, interleaved=True)
    assert out.is_contiguous()
    assert_close(out, ref_rope(x, cos, sin, True))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_ltx_layout(kernel, device, dtype):
    """LTX-Video: LTXVideoRotaryPosEmbed's fp32 cos / sin [B, S, inner] (padding entries
    first: inner % 6 != 0), x [B, S, inner] across heads, interleaved; the model's
    apply_rotary_emb computes in fp32 and rounds once, as the kernel does."""
    from diffusers.models.transformers.transformer_ltx import (
        LTXVideoRotaryPosEmbed,
        apply_rotary_emb,
    )

    inner = 256  # 8 heads x 32; 256 % 6 == 4 padding entries
    emb = LTXVideoRotaryPosEmbed(inner, patch_size=1, patch_size_t=1)
    B, F, Hh, W = 2, 2, 3, 4
    x = torch.randn(B, F * Hh * W, inner, dtype=dtype, device=device)
    cos, sin = emb(x, F, Hh, W, rope_interpolation_scale=(torch.tensor(1.0), 1.0, 1.0))
    assert cos.dtype == torch.float32 and cos.shape == x.shape
    y = kernel.rope(x, cos, sin, interleaved=True)
    assert_close(y, ref_rope(x, cos, sin, True))
    assert_close(y, apply_rotary_emb(x, (cos, sin)).double())


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_flux_layout(kernel, device, dtype):
    """FLUX: FluxPosEmbed's fp32 cos / sin [S, D] (axes 16 + 56 + 56), x [B, S, H, D] per head,
    diffusers' apply_rotary_emb(sequence_dim=1), i.e. cos [S, 1, D]."""
    from diffusers.models.embeddings import apply_rotary_emb
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    B, S, H, D = 2, 12, 3, 128
    ids = torch.randint(0, 64, (S, 3), device=device).float()
    cos, sin = FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56])(ids)
    cos, sin = cos.to(device), sin.to(device)
    assert cos.shape == (S, D)
    x = torch.randn(B, S, H, D, dtype=dtype, device=device)
    y = kernel.rope(x, cos[:, None, :], sin[:, None, :], interleaved=True)
    assert_close(y, ref_rope(x, cos[:, None, :], sin[:, None, :], True))
    assert_close(y, apply_rotary_emb(x, (cos, sin), sequence_dim=1).double())


# ---- rms_norm_rope ---------------------------------------------------------------------------


@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_reference(kernel, device, dtype, D, interleaved, wkind):
    """Norm over the whole last dim (LTX's norm_q / norm_k across heads), x [B, S, D], fp32
    tables (x-dtype tables: test_rms_norm_rope_per_head)."""
    x = torch.randn(2, 3, D, dtype=dtype, device=device)
    w = make_weight(wkind, D, dtype, device)
    cos, sin = tables((2, 3, rotary_dim(D)), dtype, device)
    out = poisoned(x.shape, dtype, device)
    y = kernel.rms_norm_rope(x, w, cos, sin, 1e-5, interleaved=interleaved, out=out)
    assert y is out
    assert_close(y, ref_rms_norm_rope(x, w, cos, sin, 1e-5, interleaved))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("D", [8, 769, 2048, 5125])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_layouts(kernel, device, dtype, D, interleaved, layout):
    x = make_input((3, 5, D), dtype, device, layout)
    w = make_weight("same", D, dtype, device)
    cos, sin = tables((3, 5, rotary_dim(D)), dtype, device)
    out = poisoned(x.shape, dtype, device)
    kernel.rms_norm_rope(x, w, cos, sin, 1e-6, interleaved=interleaved, out=out)
    assert_close(out, ref_rms_norm_rope(x, w, cos, sin, 1e-6, interleaved))


@pytest.mark.parametrize("tkind", TABLE_DTYPES)
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H,Dh,R", [(4, 64, 64), (3, 128, 128), (2, 80, 32), (5, 7, 6), (2, 8, 8),
                                    (2, 256, 256), (2, 128, 64)])
def test_rms_norm_rope_per_head(kernel, device, dtype, H, Dh, R, interleaved, wkind, tkind):
    """Per-head norm (FLUX, Qwen3 q/k norms) then rope: x [B, S, H*Dh] with num_heads, and the
    same x viewed [B, S, H, Dh] with num_heads None; cos [B, S, 1, R] and [S, 1, R]."""
    B, S = 2, 5
    x = make_input((B, S, H * Dh), dtype, device, "strided")
    w = make_weight(wkind, Dh, dtype, device)
    cos, sin = tables((B, S, 1, R), dtype, device, tkind)
    ref = ref_rms_norm_rope(x, w, cos, sin, 1e-6, interleaved, num_heads=H)
    out = poisoned(x.shape, dtype, device)
    kernel.rms_norm_rope(x, w, cos, sin, 1e-6, interleaved=interleaved, per_head=True,
                         num_heads=H, out=out)
    assert_close(out, ref)
    x4 = x.unflatten(-1, (H, Dh))
    y4 = kernel.rms_norm_rope(x4, w, cos, sin, 1e-6, interleaved=interleaved, per_head=True)
    assert_close(y4, ref.unflatten(-1, (H, Dh)))
    c1, s1 = tables((S, 1, R), dtype, device, tkind)
    y = kernel.rms_norm_rope(x, w, c1, s1, 1e-6, interleaved=interleaved, per_head=True,
                             num_heads=H)
    assert_close(y, ref_rms_norm_rope(x, w, c1, s1, 1e-6, interleaved, num_heads=H))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_ltx(kernel, device, dtype):
    """LTX-Video attention: norm_q = torch.nn.RMSNorm(inner, eps=1e-5) with weight, then the
    interleaved apply_rotary_emb with LTXVideoRotaryPosEmbed's fp32 tables, fused."""
    from diffusers.models.transformers.transformer_ltx import (
        LTXVideoRotaryPosEmbed,
        apply_rotary_emb,
    )

    inner = 2048
    norm = torch.nn.RMSNorm(inner, eps=1e-5).to(device=device, dtype=dtype)
    norm.weight.data = (1 + 0.3 * torch.randn(inner, device=device)).to(dtype)
    emb = LTXVideoRotaryPosEmbed(inner)
    x = torch.randn(2, 2 * 2 * 3, inner, dtype=dtype, device=device)
    cos, sin = emb(x, 2, 2, 3, rope_interpolation_scale=(torch.tensor(1.0), 1.0, 1.0))
    y = kernel.rms_norm_rope(x, norm.weight, cos, sin, 1e-5, interleaved=True)
    assert_close(y, ref_rms_norm_rope(x, norm.weight, cos, sin, 1e-5, True))
    # The model rounds after the norm and again after the rope: 2x tolerance.
    assert_close(y, apply_rotary_emb(norm(x), (cos, sin)).double(), scale=2)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_qwen3(kernel, device, dtype):
    """Qwen3 attention: q_norm (per head, Qwen3RMSNorm over head_dim) on q_proj(x).view(B, S, H,
    D), then apply_rotary_pos_emb (split halves) with cos / sin [B, S, D]: fused on [B, S, H, D]
    with cos [B, S, 1, D]."""
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm, apply_rotary_pos_emb

    B, S, H, D = 2, 6, 4, 128
    qn = Qwen3RMSNorm(D, eps=1e-6).to(device=device, dtype=dtype)
    qn.weight.data = (1 + 0.3 * torch.randn(D, device=device)).to(dtype)
    q = torch.randn(B, S, H * D, dtype=dtype, device=device)
    cos, sin = tables((B, S, D), dtype, device, "same")
    y = kernel.rms_norm_rope(q, qn.weight, cos.unsqueeze(2), sin.unsqueeze(2), 1e-6,
                             interleaved=False, per_head=True, num_heads=H)
    ref = ref_rms_norm_rope(q, qn.weight, cos.unsqueeze(2), sin.unsqueeze(2), 1e-6, False, H)
    assert_close(y, ref)
    q_model = qn(q.view(B, S, H, D)).transpose(1, 2)
    q_model, _ = apply_rotary_pos_emb.forward(q_model, q_model, cos, sin)
    # The model rounds five times: after the norm and after the weight (LlamaRMSNorm style),
    # then q*cos, rotate_half(q)*sin and their sum; its distance from the once-rounded kernel
    # reached 1.9x TOL over 40 seeds (fp16), hence 3x.
    assert_close(y.view(B, S, H, D).transpose(1, 2), q_model.double(), scale=3)


@pytest.mark.kernels_ci
def test_rms_norm_rope_eps(kernel, device):
    x = 1e-3 * torch.randn(4, 256, device=device)
    cos, sin = tables((4, 256), torch.float32, device)
    for eps in (0.0, 1e-6, 1e-2):
        y = kernel.rms_norm_rope(x, None, cos, sin, eps, interleaved=False)
        assert_close(y, ref_rms_norm_rope(x, None, cos, sin, eps, False))


# ---- rms_norm_rope_qk -------------------------------------------------------------------------

QK_LAYOUTS = ["contiguous", "strided", "qkv"]


def qk_inputs(shape, dtype, device, layout):
    """q and k of `shape`: separate tensors, strided rows (x[..., :D] of wider rows), or the q
    and k thirds of one fused qkv projection (rows 3D apart, q and k 16-byte aligned)."""
    if layout == "qkv":
        qkv = torch.randn(*shape[:-1], 3 * shape[-1], dtype=dtype, device=device)
        return qkv[..., : shape[-1]], qkv[..., shape[-1] : 2 * shape[-1]]
    return make_input(shape, dtype, device, layout), make_input(shape, dtype, device, layout)


@pytest.mark.parametrize("layout", QK_LAYOUTS)
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("D", [8, 769, 2048, 5125])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_qk_reference(kernel, device, dtype, D, interleaved, wkind, layout):
    """q and k of one shape (one launch for both on CUDA): each against its float64
    reference, and on the CPU bit for bit what rms_norm_rope gives for each alone. (On CUDA the
    pair runs at half the items a thread of one tensor, LTX_NORM_ROPE_LOADS, so its row sums
    are added in another order: each is held to the reference only.)"""
    q, k = qk_inputs((2, 3, D), dtype, device, layout)
    wq = make_weight(wkind, D, dtype, device)
    wk = None if wq is None else wq * 0.5 + 0.25
    cos, sin = tables((2, 3, rotary_dim(D)), dtype, device)
    qo, ko = poisoned(q.shape, dtype, device), poisoned(k.shape, dtype, device)
    yq, yk = kernel.rms_norm_rope_qk(q, k, wq, wk, cos, sin, 1e-5, interleaved=interleaved,
                                     q_out=qo, k_out=ko)
    assert yq is qo and yk is ko
    assert_close(yq, ref_rms_norm_rope(q, wq, cos, sin, 1e-5, interleaved))
    assert_close(yk, ref_rms_norm_rope(k, wk, cos, sin, 1e-5, interleaved))
    if device.type == "cpu":
        sq = kernel.rms_norm_rope(q, wq, cos, sin, 1e-5, interleaved=interleaved)
        sk = kernel.rms_norm_rope(k, wk, cos, sin, 1e-5, interleaved=interleaved)
        assert torch.equal(yq, sq) and torch.equal(yk, sk)


@pytest.mark.parametrize("tkind", TABLE_DTYPES)
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("Hq,Hk", [(4, 4), (4, 2)], ids=["mha", "gqa"])
def test_rms_norm_rope_qk_per_head(kernel, device, dtype, Hq, Hk, interleaved, wkind, tkind):
    """Per-head norms (FLUX: as many k heads as q heads, one launch; Qwen3-style GQA: q and k
    one after the other), tables [S, 1, Dh] broadcast over batch and heads."""
    B, S, Dh = 2, 5, 128
    q = make_input((B, S, Hq * Dh), dtype, device, "strided")
    k = make_input((B, S, Hk * Dh), dtype, device, "contiguous")
    wq, wk = make_weight(wkind, Dh, dtype, device), make_weight(wkind, Dh, dtype, device)
    cos, sin = tables((S, 1, Dh), dtype, device, tkind)
    yq, yk = kernel.rms_norm_rope_qk(q.unflatten(-1, (Hq, Dh)), k.unflatten(-1, (Hk, Dh)), wq,
                                     wk, cos, sin, 1e-6, interleaved=interleaved, per_head=True)
    assert_close(yq.flatten(-2), ref_rms_norm_rope(q, wq, cos, sin, 1e-6, interleaved, Hq))
    assert_close(yk.flatten(-2), ref_rms_norm_rope(k, wk, cos, sin, 1e-6, interleaved, Hk))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_qk_ltx(kernel, device, dtype):
    """LTX-Video self-attention: norm_q and norm_k (own weights, eps 1e-5) + the model's fp32
    tables, q and k in one call; a weight-less k norm too."""
    from diffusers.models.transformers.transformer_ltx import LTXVideoRotaryPosEmbed

    inner = 2048
    emb = LTXVideoRotaryPosEmbed(inner)
    q = torch.randn(2, 2 * 2 * 3, inner, dtype=dtype, device=device)
    k = torch.randn_like(q)
    cos, sin = emb(q, 2, 2, 3, rope_interpolation_scale=(torch.tensor(1.0), 1.0, 1.0))
    wq = (1 + 0.3 * torch.randn(inner, device=device)).to(dtype)
    for wk in ((1 + 0.3 * torch.randn(inner, device=device)).to(dtype), None):
        yq, yk = kernel.rms_norm_rope_qk(q, k, wq, wk, cos, sin, 1e-5, interleaved=True)
        assert_close(yq, ref_rms_norm_rope(q, wq, cos, sin, 1e-5, True))
        assert_close(yk, ref_rms_norm_rope(k, wk, cos, sin, 1e-5, True))


SHARED_TABLES = [
    # x (q and k) shape, table shape, how the table broadcasts over x's rows
    ((3, 5, 64), (1, 5, 64), "expand"),  # LTX: tables of one sample expanded over the batch
    ((3, 5, 64), (5, 64), "plain"),  # the same without the batch dim
    ((2, 3, 5, 64), (3, 1, 64), "plain"),  # shared by the outer and the inner dim
    ((2, 4, 3, 64), (1, 4, 1, 64), "expand"),  # shared by two dims, kept in between
    # x a view of a larger tensor (dims 1 and 2 cut from 3 to 2): its rows need 3 strided
    # levels, permuted they would need 5, so they are walked in x's order
    ((2, 2, 2, 2, 2, 8), (2, 2, 2, 1, 2, 8), "cut"),
]


@pytest.mark.parametrize("layout", QK_LAYOUTS)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("xshape,tshape,how", SHARED_TABLES)
def test_rms_norm_rope_shared_tables(kernel, device, dtype, xshape, tshape, how, interleaved,
                                     layout):
    """Tables shared over leading dims with a dim inside them where they are not (CUDA walks
    those rows side by side, common/op_checks.h shared_table_rows_inner: x, out and the tables
    permuted alike), against the float64 reference, for rms_norm_rope and the q / k pair; and
    with out strided, a GQA-shaped k (permuted on its own) and an x whose rows cannot be
    permuted within four strided levels (the last case)."""
    q, k = qk_inputs(xshape, dtype, device, layout)
    if how == "cut":
        base = (2, 3, 3, 2, 2, 8)
        q, k = (torch.randn(base, dtype=dtype, device=device)[:, :2, :2] for _ in range(2))
    wq = make_weight("same", xshape[-1], dtype, device)
    cos, sin = tables(tshape, dtype, device)
    if how == "expand":
        cos, sin = cos.expand(*xshape), sin.expand(*xshape)
    out = poisoned(xshape, dtype, device, "strided")
    kernel.rms_norm_rope(q, wq, cos, sin, 1e-5, interleaved=interleaved, out=out)
    assert_close(out, ref_rms_norm_rope(q, wq, cos, sin, 1e-5, interleaved))
    yq, yk = kernel.rms_norm_rope_qk(q, k, wq, None, cos, sin, 1e-5, interleaved=interleaved)
    assert_close(yq, ref_rms_norm_rope(q, wq, cos, sin, 1e-5, interleaved))
    assert_close(yk, ref_rms_norm_rope(k, None, cos, sin, 1e-5, interleaved))
    # k with a dim half as long where the tables broadcast: q and k one after the other
    gqa = [n // 2 if (c == 1 and n > 1 and n % 2 == 0) else n
           for n, c in zip(xshape, (1,) * (len(xshape) - len(tshape)) + tshape)]
    if gqa != list(xshape) and how == "plain":
        k2 = torch.randn(gqa, dtype=dtype, device=device)
        yq, yk = kernel.rms_norm_rope_qk(q, k2, wq, wq, cos, sin, 1e-5, interleaved=interleaved)
        assert_close(yq, ref_rms_norm_rope(q, wq, cos, sin, 1e-5, interleaved))
        assert_close(yk, ref_rms_norm_rope(k2, wq, cos, sin, 1e-5, interleaved))


@pytest.mark.kernels_ci
def test_rms_norm_rope_qk_empty_and_errors(kernel, device):
    bf = torch.bfloat16
    q = torch.randn(2, 3, 64, dtype=bf, device=device)
    cos, sin = tables((2, 3, 64), bf, device, "same")
    e = torch.empty(0, 3, 64, dtype=bf, device=device)
    yq, yk = kernel.rms_norm_rope_qk(e, e, None, None, cos[:0], sin[:0], 1e-6, interleaved=True)
    assert yq.shape == e.shape and yk.shape == e.shape
    # an empty k beside a non-empty q (different shapes: one after the other)
    c1, s1 = cos[:1, :1], sin[:1, :1]
    yq, yk = kernel.rms_norm_rope_qk(q, q[:, :0], None, None, c1, s1, 1e-6, interleaved=True)
    assert_close(yq, ref_rms_norm_rope(q, None, c1, s1, 1e-6, True))
    assert yk.shape == (2, 0, 64)

    def qk(q=q, k=q, wq=None, wk=None, **kw):
        return kernel.rms_norm_rope_qk(q, k, wq, wk, cos, sin, 1e-6, interleaved=True, **kw)

    with pytest.raises(RuntimeError, match="k: dtype must match q"):
        qk(k=q.half())
    with pytest.raises(RuntimeError, match="k: last dim"):
        qk(k=torch.randn(2, 3, 32, dtype=bf, device=device))
    with pytest.raises(RuntimeError, match="k_weight: dtype must match q_weight"):
        qk(wq=torch.ones(64, dtype=bf, device=device), wk=torch.ones(64, device=device))
    with pytest.raises(RuntimeError, match="q_weight"):
        qk(wq=torch.ones(32, dtype=bf, device=device))
    with pytest.raises(RuntimeError, match="k_out"):
        qk(k_out=torch.empty(2, 3, 64, dtype=torch.float16, device=device))
    with pytest.raises(RuntimeError, match="eps"):
        kernel.rms_norm_rope_qk(q, q, None, None, cos, sin, -1.0, interleaved=True)
    with pytest.raises(ValueError, match="num_heads"):
        qk(num_heads=2)


# ---- pair tables (pair_tables=True) ----------------------------------------------------------


def full_tables(c, s, interleaved):
    """The full tables `[..., R]` that pair tables `[..., R/2]` stand for: each value at both
    elements of its pair."""
    if interleaved:
        return c.repeat_interleave(2, -1), s.repeat_interleave(2, -1)
    return torch.cat([c, c], -1), torch.cat([s, s], -1)


@pytest.mark.parametrize("tkind", TABLE_DTYPES)
@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("D,L", [(8, 4), (64, 1), (64, 24), (64, 31), (769, 384), (2048, 1024),
                                 (5125, 2562), (5125, 1280)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_pair_tables(kernel, device, dtype, D, L, interleaved, tkind):
    """Pair tables (one random value a pair, L = R/2 of them, partial rotary included) against
    the float64 reference with the full tables they stand for, and bit for bit what the op
    gives with those full tables (the same fp32 values in the same formula), for
    rms_norm_rope and the q / k pair (one launch on CUDA) with q and k of one fused qkv."""
    q, k = qk_inputs((2, 3, D), dtype, device, "qkv")
    w = make_weight("same", D, dtype, device)
    ch, sh = tables((2, 3, L), dtype, device, tkind)
    cf, sf = full_tables(ch, sh, interleaved)
    y = kernel.rms_norm_rope(q, w, ch, sh, 1e-5, interleaved=interleaved, pair_tables=True)
    assert_close(y, ref_rms_norm_rope(q, w, cf, sf, 1e-5, interleaved))
    assert torch.equal(y, kernel.rms_norm_rope(q, w, cf, sf, 1e-5, interleaved=interleaved))
    yq, yk = kernel.rms_norm_rope_qk(q, k, w, None, ch, sh, 1e-5, interleaved=interleaved,
                                     pair_tables=True)
    fq, fk = kernel.rms_norm_rope_qk(q, k, w, None, cf, sf, 1e-5, interleaved=interleaved)
    assert_close(yq, ref_rms_norm_rope(q, w, cf, sf, 1e-5, interleaved))
    assert_close(yk, ref_rms_norm_rope(k, None, cf, sf, 1e-5, interleaved))
    assert torch.equal(yq, fq) and torch.equal(yk, fk)


PAIR_BROADCAST = [
    # x shape, pair table shape, num_heads (per head) or None
    ((3, 5, 64), (1, 5, 32), None),  # LTX: one sample's tables for the whole batch
    ((2, 6, 4 * 32), (6, 1, 16), 4),  # FLUX / Qwen3: per head, [S, 1, Dh / 2]
    ((2, 6, 4 * 32), (2, 6, 1, 8), 4),  # per head, partial rotary, per sample
]


@pytest.mark.parametrize("interleaved", PAIRS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("xshape,tshape,heads", PAIR_BROADCAST)
def test_rms_norm_rope_pair_tables_broadcast(kernel, device, dtype, xshape, tshape, heads,
                                             interleaved):
    """Pair tables broadcast over the batch (the rows that share them walked side by side on
    CUDA) and per head, q and k strided (one fused qkv) and k of half the heads (GQA: q and k
    one after the other): the same results as with the full tables."""
    q, k = qk_inputs(xshape, dtype, device, "qkv")
    kw = dict(interleaved=interleaved, per_head=heads is not None, num_heads=heads)
    dh = xshape[-1] // (heads or 1)
    w = make_weight("fp32", dh, dtype, device)
    ch, sh = tables(tshape, dtype, device)
    cf, sf = full_tables(ch, sh, interleaved)
    yq, yk = kernel.rms_norm_rope_qk(q, k, w, w, ch, sh, 1e-6, pair_tables=True, **kw)
    assert_close(yq, ref_rms_norm_rope(q, w, cf, sf, 1e-6, interleaved, heads))
    fq, fk = kernel.rms_norm_rope_qk(q, k, w, w, cf, sf, 1e-6, **kw)
    assert torch.equal(yq, fq) and torch.equal(yk, fk)
    if heads is not None:  # GQA: q and k as [..., H, Dh], k with half the heads
        qh = q.unflatten(-1, (heads, dh))
        kg = torch.randn(*xshape[:-1], heads // 2, dh, dtype=dtype, device=device)
        kw.update(per_head=True, num_heads=None)
        yq, yk = kernel.rms_norm_rope_qk(qh, kg, w, w, ch, sh, 1e-6, pair_tables=True, **kw)
        assert_close(yk.flatten(-2), ref_rms_norm_rope(kg.flatten(-2), w, cf, sf, 1e-6,
                                                       interleaved, heads // 2))
        fq, fk = kernel.rms_norm_rope_qk(qh, kg, w, w, cf, sf, 1e-6, **kw)
        assert torch.equal(yq, fq) and torch.equal(yk, fk)


@pytest.mark.parametrize("tkind", ["pairs-shared", "pairs", "full", "full-same-shared"])
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("D,R", [(64, 64), (1000, 1000), (2048, 2048), (2048, 1024),
                                 (4096, 4096), (5120, 5120)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_dense_rows_many(kernel, device, dtype, D, R, wkind, tkind):
    """Grids of several waves down the dense path (rms_norm_rope.cu: one 16-byte vector of q
    and of k a thread, interleaved pairs, rows at up to two strides in 32 bits) at the
    defaults on sm_90: q and k the thirds of one fused qkv projection, tables per sample or one
    sample's for the batch (LTX-Video's pair tables), as pair tables or full ones (fp32, or in
    x's dtype), partial rotary, rows of 8 to 640 vectors (D = 1000: lanes past the row's end;
    5120: over the dense cap, the other path). rms_norm_rope into a strided out too. Every
    output element written."""
    if device.type != "cuda":
        pytest.skip("CUDA: the dense path's grids (the CPU kernels have no such path)")
    B, S = 2, 1367
    q, k = qk_inputs((B, S, D), dtype, device, "qkv")
    wq = make_weight(wkind, D, dtype, device)
    wk = None if wq is None else wq * 0.5 + 0.25
    pairs = tkind.startswith("pairs")
    tb = 1 if tkind.endswith("shared") else B
    ch, sh = tables((tb, S, R // 2 if pairs else R), dtype, device,
                    "same" if tkind == "full-same-shared" else "fp32")
    cf, sf = full_tables(ch, sh, True) if pairs else (ch, sh)
    qo, ko = poisoned(q.shape, dtype, device), poisoned(k.shape, dtype, device)
    yq, yk = kernel.rms_norm_rope_qk(q, k, wq, wk, ch, sh, 1e-5, interleaved=True,
                                     pair_tables=pairs, q_out=qo, k_out=ko)
    assert_close(yq, ref_rms_norm_rope(q, wq, cf, sf, 1e-5, True))
    assert_close(yk, ref_rms_norm_rope(k, wk, cf, sf, 1e-5, True))
    out = poisoned((B, S, D), dtype, device, "strided")
    kernel.rms_norm_rope(k, wk, ch, sh, 1e-5, interleaved=True, pair_tables=pairs, out=out)
    assert_close(out, ref_rms_norm_rope(k, wk, cf, sf, 1e-5, True))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rope_pair_tables_models(kernel, device, dtype):
    """The models' own tables as pair tables (`rope_pair_tables`): LTX-Video's fp32 tables
    (interleaved, with the padding pair of 2048 % 6) and LLaMA's (split halves): the results
    of the full tables, bit for bit."""
    from diffusers.models.transformers.transformer_ltx import LTXVideoRotaryPosEmbed
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    emb = LTXVideoRotaryPosEmbed(2048)
    q = torch.randn(2, 2 * 2 * 3, 2048, dtype=dtype, device=device)
    k = torch.randn_like(q)
    cos, sin = emb(q, 2, 2, 3, rope_interpolation_scale=(torch.tensor(1.0), 1.0, 1.0))
    ch, sh = kernel.rope_pair_tables(cos[:1], sin[:1], interleaved=True)
    assert ch.shape == (1, 12, 1024) and ch.is_contiguous()
    w = (1 + 0.3 * torch.randn(2048, device=device)).to(dtype)
    pq, pk = kernel.rms_norm_rope_qk(q, k, w, w, ch, sh, 1e-5, interleaved=True,
                                     pair_tables=True)
    fq, fk = kernel.rms_norm_rope_qk(q, k, w, w, cos, sin, 1e-5, interleaved=True)
    assert torch.equal(pq, fq) and torch.equal(pk, fk)

    cfg = LlamaConfig(hidden_size=256, num_attention_heads=4, num_key_value_heads=2)
    pos = torch.arange(7, device=device)[None]
    cos, sin = LlamaRotaryEmbedding(cfg).to(device)(q, pos)  # [1, 7, 64], x's dtype
    x = torch.randn(1, 4, 7, 64, dtype=dtype, device=device)
    ch, sh = kernel.rope_pair_tables(cos, sin, interleaved=False)
    y = kernel.rms_norm_rope(x, None, ch[:, None], sh[:, None], 1e-6, interleaved=False,
                             pair_tables=True)
    assert torch.equal(y, kernel.rms_norm_rope(x, None, cos[:, None], sin[:, None], 1e-6,
                                               interleaved=False))


@pytest.mark.kernels_ci
def test_rms_norm_rope_pair_tables_errors(kernel, device):
    bf = torch.bfloat16
    x = torch.randn(2, 3, 64, dtype=bf, device=device)
    ch, sh = tables((2, 3, 32), bf, device, "same")

    def nr(cos=ch, sin=sh, **kw):
        return kernel.rms_norm_rope(x, None, cos, sin, 1e-6, interleaved=True, pair_tables=True,
                                    **kw)

    nr()  # R = 64 = D
    with pytest.raises(RuntimeError, match="pair_tables"):  # R = 66 > D
        nr(cos=torch.cat([ch, ch[..., :1]], -1), sin=torch.cat([sh, sh[..., :1]], -1))
    with pytest.raises(RuntimeError, match="pair_tables"):  # no pair
        nr(cos=ch[..., :0], sin=sh[..., :0])
    with pytest.raises(RuntimeError, match="pair_tables"):  # per head: R / 2 <= Dh / 2
        nr(cos=ch[..., None, :], sin=sh[..., None, :], per_head=True, num_heads=2)
    with pytest.raises(RuntimeError, match="cos"):  # does not broadcast against x
        nr(cos=ch[:, :2], sin=sh[:, :2])
    with pytest.raises(RuntimeError, match="pair_tables"):
        kernel.rms_norm_rope_qk(x, x, None, None, torch.cat([ch, ch], -1),
                                torch.cat([sh, sh], -1), 1e-6, interleaved=False,
                                pair_tables=True)


@pytest.mark.kernels_ci
def test_rms_norm_rope_pair_tables_compile(kernel, device):
    """fullgraph, the pair tables made inside the graph from full ones (as the LTX injection
    does under torch.compile): the eager result."""
    dt = torch.bfloat16
    w = torch.randn(128, dtype=dt, device=device)

    def f(q, k, cos, sin):
        ch, sh = kernel.rope_pair_tables(cos[:1], sin[:1], interleaved=True)
        return kernel.rms_norm_rope_qk(q, k, w, w, ch, sh, 1e-5, interleaved=True,
                                       pair_tables=True)

    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True)
    q = torch.randn(2, 9, 128, dtype=dt, device=device)
    k = torch.randn_like(q)
    theta = torch.randn(1, 9, 64, device=device)
    cos, sin = full_tables(theta.cos(), theta.sin(), True)
    cos, sin = cos.expand(2, -1, -1), sin.expand(2, -1, -1)
    for a, b in zip(cf(q, k, cos, sin), f(q, k, cos, sin)):
        assert torch.equal(a, b)


# ---- opcheck, compile, bad inputs ------------------------------------------------------------


@pytest.mark.kernels_ci
def test_opcheck(kernel, device):
    for dtype in DTYPES:
        x = torch.randn(2, 3, 64, dtype=dtype, device=device)
        k = torch.randn(2, 1, 64, dtype=dtype, device=device)
        w = torch.randn(64, dtype=dtype, device=device)
        cos, sin = tables((2, 1, 64), dtype, device)
        c16, s16 = tables((2, 1, 64), dtype, device, "same")
        out = torch.empty_like(x)
        torch.library.opcheck(kernel.ops.rope, (out, x, cos, sin, True))
        torch.library.opcheck(kernel.ops.rope, (out, x, c16, s16, False))
        torch.library.opcheck(kernel.ops.rope_qk, (out, torch.empty_like(k), x, k, cos, sin, False))
        torch.library.opcheck(kernel.ops.rms_norm_rope,
                              (out, x, w, cos, sin, 1e-6, True, 1, False))
        c32, s32 = tables((2, 1, 1, 32), dtype, device)
        torch.library.opcheck(kernel.ops.rms_norm_rope,
                              (out, x, None, c32, s32, 1e-6, False, 2, False))
        # pair tables: [..., R/2]
        torch.library.opcheck(kernel.ops.rms_norm_rope,
                              (out, x, w, c32[:, :, 0], s32[:, :, 0], 1e-6, True, 1, True))
        k3 = torch.randn_like(x)
        torch.library.opcheck(kernel.ops.rms_norm_rope_qk, (out, torch.empty_like(x), x, k3, w,
                                                            None, cos, sin, 1e-6, True, 1, False))
        torch.library.opcheck(kernel.ops.rms_norm_rope_qk, (out, torch.empty_like(k), x, k, None,
                                                            w[:32], c32, s32, 1e-6, False, 2,
                                                            False))
        torch.library.opcheck(kernel.ops.rms_norm_rope_qk,
                              (out, torch.empty_like(x), x, k3, w, None, c32[:, :, 0],
                               s32[:, :, 0], 1e-6, False, 1, True))


@pytest.mark.kernels_ci
def test_compile(kernel, device):
    """fullgraph (no graph break), dynamic batch and sequence without recompiling."""
    dt = torch.bfloat16
    w = torch.randn(64, dtype=dt, device=device)

    def f(q, k, cos, sin):
        qo, ko = kernel.rope_qk(q * 2, k, cos, sin, interleaved=False)
        x = kernel.rope(qo, cos, sin, interleaved=True)
        n = kernel.rms_norm_rope(ko, w, cos, sin, 1e-6, interleaved=True, per_head=True)
        nq, nk = kernel.rms_norm_rope_qk(qo, ko, w, None, cos, sin, 1e-6, interleaved=False,
                                         per_head=True)
        return x + 1, n, nq, nk

    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True, dynamic=True)
    with torch._dynamo.config.patch(error_on_recompile=True):
        # The first call's sizes are all distinct, so that duck sizing ties no two together.
        for b, s in ((3, 5), (5, 7), (6, 16), (9, 3)):
            q = torch.randn(b, 4, s, 64, dtype=dt, device=device)
            k = torch.randn(b, 2, s, 64, dtype=dt, device=device)
            cos, sin = tables((b, 1, s, 64), dt, device)
            got, want = cf(q, k, cos, sin), f(q, k, cos, sin)
            assert_close(got[0], want[0].double(), scale=2)  # the *2 and +1 round once more
            for g, w_ in zip(got[1:], want[1:]):
                assert_close(g, w_.double())


@pytest.mark.kernels_ci
def test_bad_inputs(kernel, device):
    bf = torch.bfloat16
    x = torch.randn(2, 3, 64, dtype=bf, device=device)
    cos, sin = tables((2, 3, 64), bf, device, "same")

    def rope(x=x, cos=cos, sin=sin, **kw):
        return kernel.rope(x, cos, sin, interleaved=False, **kw)

    with pytest.raises(RuntimeError, match="cos"):  # odd rotary dim
        rope(cos=cos[..., :63], sin=sin[..., :63])
    with pytest.raises(RuntimeError, match="cos"):  # R > D
        rope(x=x[..., :32])
    with pytest.raises(RuntimeError, match="cos"):  # D = 1 cannot hold a pair
        rope(x=x[..., :1], cos=cos[..., :2], sin=sin[..., :2])
    with pytest.raises(RuntimeError, match="sin"):  # sin's shape is not cos's
        rope(sin=sin[:1])
    with pytest.raises(RuntimeError, match="cos"):  # does not broadcast against x
        rope(cos=torch.randn(3, 3, 64, dtype=bf, device=device),
             sin=torch.randn(3, 3, 64, dtype=bf, device=device))
    with pytest.raises(RuntimeError, match="cos"):  # more dims than x
        rope(cos=cos[None], sin=sin[None])
    with pytest.raises(RuntimeError, match="cos"):  # a 16-bit table of another dtype
        rope(cos=cos.half(), sin=sin.half())
    with pytest.raises(RuntimeError, match="sin"):  # sin's dtype is not cos's
        rope(cos=cos.float())
    with pytest.raises(RuntimeError, match="cos"):  # last dim not contiguous
        c = torch.randn(2, 3, 64, 2, dtype=bf, device=device)[..., 0]
        rope(cos=c, sin=c)
    with pytest.raises(RuntimeError, match="input"):
        rope(x=torch.randn(2, 64, 3, dtype=bf, device=device).transpose(1, 2))
    with pytest.raises(RuntimeError, match="input"):
        rope(x=torch.ones(2, 3, 64, dtype=torch.int32, device=device))
    with pytest.raises(RuntimeError, match="out"):
        rope(out=torch.empty(2, 3, 64, device=device))
    with pytest.raises(RuntimeError, match="out"):
        rope(out=torch.empty(2, 3, 66, dtype=bf, device=device))

    k = torch.randn(2, 1, 64, dtype=bf, device=device)
    c1, s1 = cos[:, :1], sin[:, :1]
    with pytest.raises(RuntimeError, match="k"):
        kernel.rope_qk(x, k.half(), c1, s1, interleaved=True)
    with pytest.raises(RuntimeError, match="k"):
        kernel.rope_qk(x, torch.randn(2, 1, 32, dtype=bf, device=device), c1[..., :32],
                       s1[..., :32], interleaved=True)
    with pytest.raises(RuntimeError, match="k_out"):
        kernel.rope_qk(x, k, c1, s1, interleaved=True, k_out=torch.empty(2, 2, 64, dtype=bf,
                                                                         device=device))

    def nr(x=x, w=None, cos=cos, sin=sin, eps=1e-6, **kw):
        return kernel.rms_norm_rope(x, w, cos, sin, eps, interleaved=True, **kw)

    with pytest.raises(RuntimeError, match="eps"):
        nr(eps=-1.0)
    with pytest.raises(RuntimeError, match="num_heads"):
        nr(per_head=True, num_heads=5)
    with pytest.raises(RuntimeError, match="num_heads"):
        nr(per_head=True, num_heads=0)
    with pytest.raises(ValueError, match="num_heads"):
        nr(num_heads=2)
    with pytest.raises(RuntimeError, match="weight"):  # per head: weight is [D / H]
        nr(w=torch.ones(64, dtype=bf, device=device), cos=cos[..., None, :16],
           sin=sin[..., None, :16], per_head=True, num_heads=4)
    with pytest.raises(RuntimeError, match="weight"):
        nr(w=torch.ones(64, dtype=torch.float16, device=device))
    with pytest.raises(RuntimeError, match="cos"):  # per head: R <= D / H
        nr(cos=cos[..., None, :], sin=sin[..., None, :], per_head=True, num_heads=2)
    if device.type == "cuda":
        with pytest.raises(RuntimeError, match="cos"):
            rope(cos=cos.cpu(), sin=sin.cpu())
        with pytest.raises(RuntimeError, match="weight"):
            nr(w=torch.ones(64, dtype=bf))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_CUDA, reason="CUDA only: > 2^31 elements")
def test_rope_huge(backend):
    """More than 2^31 elements: 64-bit offsets in x, out and the broadcast tables."""
    if backend != "cuda":
        pytest.skip("CUDA only")
    from conftest import load_kernel

    k = load_kernel("cuda")
    B, H, D = 2, 16, 128
    S = (2**31) // (B * H * D) + 5
    x = torch.randn(B, H, S, D, dtype=torch.bfloat16, device="cuda")
    cos, sin = tables((B, 1, S, D), torch.bfloat16, "cuda", "same")
    y = k.rope(x, cos, sin, interleaved=False)
    for sl in (slice(0, 2), slice(S - 2, S)):
        assert_close(y[:, :, sl], ref_rope(x[:, :, sl], cos[:, :, sl], sin[:, :, sl], False))
    w = torch.ones(D, dtype=torch.bfloat16, device="cuda")
    y = k.rms_norm_rope(x, w, cos, sin, 1e-6, interleaved=True)
    for sl in (slice(0, 2), slice(S - 2, S)):
        assert_close(y[:, :, sl], ref_rms_norm_rope(x[:, :, sl], w, cos[:, :, sl], sin[:, :, sl],
                                                    1e-6, True))
    del x, y, cos, sin
    torch.cuda.empty_cache()


# ---- the transformers layer ------------------------------------------------------------------


@pytest.mark.kernels_ci
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_matches_apply_rotary_pos_emb(kernel, device, dtype, unsqueeze_dim):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    B, S, Hq, Hk, D = 2, 5, 4, 2, 64
    shape = (lambda h: (B, h, S, D)) if unsqueeze_dim == 1 else (lambda h: (B, S, h, D))
    q = torch.randn(shape(Hq), dtype=dtype, device=device)
    k = torch.randn(shape(Hk), dtype=dtype, device=device)
    cos, sin = tables((B, S, D), dtype, device, "same")
    q_ref, k_ref = apply_rotary_pos_emb.forward(q, k, cos, sin, unsqueeze_dim)
    qo, ko = kernel.layers.RotaryPosEmb.forward(apply_rotary_pos_emb, q, k, cos, sin, unsqueeze_dim)
    assert qo.dtype == q_ref.dtype and ko.dtype == k_ref.dtype
    # The model's formula rounds three times (see test_rope_llama_layout).
    assert_close(qo, q_ref.double(), scale=2)
    assert_close(ko, k_ref.double(), scale=2)
    if dtype != torch.float32:
        # fp32 tables with 16-bit q / k: the model's result is fp32; the layer keeps that.
        c32, s32 = cos.float(), sin.float()
        q_ref, k_ref = apply_rotary_pos_emb.forward(q, k, c32, s32, unsqueeze_dim)
        qo, ko = kernel.layers.RotaryPosEmb.forward(apply_rotary_pos_emb, q, k, c32, s32,
                                                    unsqueeze_dim)
        assert qo.dtype == q_ref.dtype == torch.float32
        assert_close(qo, q_ref.double())


@pytest.mark.kernels_ci
def test_layer_kernelize_llama(backend, kernel, device):
    """A tiny LlamaForCausalLM, kernelized with "rotary_pos_emb" mapped to this repository's
    layer (LocalLayerRepository on this checkout: LayerRepository would ask the Hub for the
    version's revision): the model's apply_rotary_pos_emb now runs the kernel, and the logits
    match the eager model's."""
    from kernels import LocalLayerRepository, Mode, kernelize, use_kernel_mapping
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama import modeling_llama

    cfg = LlamaConfig(vocab_size=128, hidden_size=128, intermediate_size=256,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=64)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(device).eval()
    ids = torch.randint(0, 128, (2, 11), device=device)
    with torch.no_grad():
        ref = model(ids).logits

    fn = modeling_llama.apply_rotary_pos_emb
    mapping = {
        "rotary_pos_emb": {
            # the exact variant loaded for this backend (on a CUDA torch the checkout's default
            # variant is the CUDA one, also for the CPU backend)
            device.type: LocalLayerRepository(repo_path=Path(kernel.__file__).parent,
                                              layer_name="RotaryPosEmb")
        }
    }
    try:
        with use_kernel_mapping(mapping, inherit_mapping=False):
            kernelize(model, mode=Mode.INFERENCE, device=device.type)
        assert fn.forward.__func__.__qualname__ == "RotaryPosEmb.forward"
        with torch.no_grad():
            got = model(ids).logits
    finally:
        restore_transformers_kernel_funcs()  # for the rest of the session
    assert_close(got, ref.double())
