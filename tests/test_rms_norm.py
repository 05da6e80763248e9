"""rms_norm: against float64 references on every backend, dtype, layout and the DESIGN.md shape
list; opcheck; torch.compile; bad inputs; the transformers and diffusers layers."""

import pytest
import torch

from conftest import DTYPES, HAS_CUDA, LAYOUTS, assert_close, make_input, poisoned

HIDDEN_SIZES = [1, 7, 8, 768, 769, 2048, 3072, 5120, 5125, 8192, 16384]
WEIGHTS = ["none", "same", "fp32"]


def ref_rms_norm(x, weight, eps, round_before_weight=False, round_dtype=None):
    """float64 reference; with round_before_weight, the normalized value is rounded to
    `round_dtype` first, where LlamaRMSNorm rounds."""
    xd = x.double()
    n = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    if round_before_weight:
        n = n.to(round_dtype).double()
    return n * weight.double() if weight is not None else n


def make_weight(kind, D, dtype, device):
    if kind == "none":
        return None
    wdt = torch.float32 if kind == "fp32" else dtype
    return (1.0 + 0.5 * torch.randn(D, device=device)).to(wdt)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_reference(kernel, device, dtype, D, wkind, layout):
    x = make_input((3, 5, D), dtype, device, layout)
    w = make_weight(wkind, D, dtype, device)
    out = poisoned(x.shape, dtype, device)
    y = kernel.rms_norm(x, w, 1e-6, out=out)
    assert y is out
    assert_close(y, ref_rms_norm(x, w, 1e-6))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D", [8, 2048, 769])
def test_rms_norm_fp32_weight_fp32_out(kernel, device, dtype, D):
    """fp32 weight with a 16-bit input and an fp32 `out`: the fp32 product is kept (diffusers)."""
    x = torch.randn(4, D, dtype=dtype, device=device)
    w = make_weight("fp32", D, dtype, device)
    out = poisoned(x.shape, torch.float32, device)
    kernel.rms_norm(x, w, 1e-5, out=out)
    assert_close(out, ref_rms_norm(x, w, 1e-5), torch.float32)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("wdtype_same", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D", [7, 2048, 4096])
def test_rms_norm_round_before_weight(kernel, device, dtype, D, wdtype_same):
    """LlamaRMSNorm's rounding: `weight * x_normed.to(dtype)`."""
    x = torch.randn(6, D, dtype=dtype, device=device)
    w = make_weight("same" if wdtype_same else "fp32", D, dtype, device)
    out_dtype = torch.promote_types(dtype, w.dtype)
    out = poisoned(x.shape, out_dtype, device)
    kernel.rms_norm(x, w, 1e-6, out=out, round_before_weight=True)
    assert_close(out, ref_rms_norm(x, w, 1e-6, True, dtype), dtype)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("shape", [(1, 2048), (2048,), (1, 1, 1), (0, 2048), (4, 0), (2, 0, 64)])
def test_rms_norm_edge_shapes(kernel, device, shape):
    x = torch.randn(shape, device=device)
    w = torch.randn(shape[-1], device=device)
    y = kernel.rms_norm(x, w)
    assert y.shape == x.shape
    if x.numel():
        assert_close(y, ref_rms_norm(x, w, 1e-6))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_two_level_rows(kernel, device, dtype):
    """Per-head norm on one slice of a fused QKV projection: rows at two strides
    (heads within a token, tokens within the batch)."""
    B, S, H, Dh = 2, 7, 4, 64
    qkv = torch.randn(B, S, 3 * H * Dh, dtype=dtype, device=device)
    q = qkv[..., : H * Dh].unflatten(-1, (H, Dh))
    w = make_weight("same", Dh, dtype, device)
    out = poisoned(q.shape, dtype, device)
    kernel.rms_norm(q, w, 1e-6, out=out)
    assert_close(out, ref_rms_norm(q, w, 1e-6))
    # Three non-mergeable levels: the input is copied to contiguous rows, still correct.
    x3 = torch.randn(5, 3, 4, 2 * Dh, dtype=dtype, device=device)[:, :, :, :Dh].transpose(0, 1)
    assert_close(kernel.rms_norm(x3, w), ref_rms_norm(x3, w, 1e-6))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_two_level_rows_many(kernel, device, dtype):
    """Per-head q norm on a fused QKV projection with enough rows for CUDA's grids beyond one
    wave (the staged path with rows at two strides; the test above is one wave), into a
    strided out; and fused_add_rms_norm on `[S, B, D]` memory seen as `[B, S, D]`."""
    B, S, H, Dh = 2, 1024, 8, 128
    qkv = torch.randn(B, S, 3 * H * Dh, dtype=dtype, device=device)
    q = qkv[..., : H * Dh].unflatten(-1, (H, Dh))
    w = make_weight("same", Dh, dtype, device)
    out = poisoned((B, S, H, 2 * Dh), dtype, device)[..., :Dh]
    kernel.rms_norm(q, w, 1e-6, out=out)
    assert_close(out, ref_rms_norm(q, w, 1e-6))
    D = 2048
    x, res = (torch.randn(S, B, D, dtype=dtype, device=device).transpose(0, 1) for _ in range(2))
    w = make_weight("same", D, dtype, device)
    want_res = (x.float() + res.float()).to(dtype)
    want = ref_rms_norm(want_res, w, 1e-6)
    kernel.fused_add_rms_norm(x, res, w, 1e-6)
    assert torch.equal(res, want_res)
    assert_close(x, want)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_strided_out(kernel, device, dtype):
    x = torch.randn(9, 1024, dtype=dtype, device=device)
    big = poisoned((9, 1040), dtype, device)
    out = big[:, 8:1032]
    kernel.rms_norm(x, None, 1e-6, out=out)
    assert_close(out, ref_rms_norm(x, None, 1e-6))
    assert torch.isnan(big[:, :8]).all() and torch.isnan(big[:, 1032:]).all(), "wrote outside out"


def test_rms_norm_eps(kernel, device):
    x = 1e-3 * torch.randn(4, 256, device=device)
    for eps in (0.0, 1e-6, 1e-2):
        assert_close(kernel.rms_norm(x, None, eps), ref_rms_norm(x, None, eps))


@pytest.mark.kernels_ci
def test_rms_norm_opcheck(kernel, device):
    for dtype in DTYPES:
        x = torch.randn(3, 64, dtype=dtype, device=device)
        w = torch.randn(64, dtype=dtype, device=device)
        out = torch.empty_like(x)
        torch.library.opcheck(kernel.ops.rms_norm, (out, x, w, 1e-6, False))
        torch.library.opcheck(kernel.ops.rms_norm, (out, x, None, 1e-6, True))


@pytest.mark.kernels_ci
def test_rms_norm_compile(kernel, device):
    """fullgraph (no graph break), dynamic batch without recompiling."""
    w = torch.randn(256, dtype=torch.bfloat16, device=device)

    def f(x):
        return kernel.rms_norm(x * 2, w, 1e-6) + 1

    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True, dynamic=True)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for b in (2, 3, 5, 8):
            x = torch.randn(b, 16, 256, dtype=torch.bfloat16, device=device)
            assert_close(cf(x), f(x).double(), scale=2)  # the +1 and *2 round once more


@pytest.mark.kernels_ci
def test_rms_norm_bad_inputs(kernel, device):
    x = torch.randn(4, 64, dtype=torch.bfloat16, device=device)
    with pytest.raises(RuntimeError, match="weight"):
        kernel.rms_norm(x, torch.randn(64, dtype=torch.float16, device=device))
    with pytest.raises(RuntimeError, match="weight"):
        kernel.rms_norm(x, torch.randn(63, dtype=torch.bfloat16, device=device))
    with pytest.raises(RuntimeError, match="input"):
        kernel.rms_norm(torch.randn(64, 4, device=device).t())
    with pytest.raises(RuntimeError, match="input"):
        kernel.rms_norm(torch.ones(4, 64, dtype=torch.int32, device=device))
    with pytest.raises(RuntimeError, match="eps"):
        kernel.rms_norm(x, None, -1.0)
    with pytest.raises(RuntimeError, match="out"):
        kernel.rms_norm(x, None, out=torch.empty(4, 64, device=device))
    with pytest.raises(RuntimeError, match="out"):
        kernel.rms_norm(x, None, out=torch.empty(4, 65, dtype=torch.bfloat16, device=device))
    if device.type == "cuda":
        with pytest.raises(RuntimeError, match="weight"):
            kernel.rms_norm(x, torch.randn(64, dtype=torch.bfloat16))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_CUDA, reason="CUDA only: > 2^31 elements")
def test_rms_norm_huge(backend):
    """More than 2^31 elements: 64-bit offsets."""
    if backend != "cuda":
        pytest.skip("CUDA only")
    from conftest import load_kernel

    k = load_kernel("cuda")
    D = 4096
    rows = (2**31) // D + 3
    x = torch.randn(rows, D, dtype=torch.bfloat16, device="cuda")
    y = k.rms_norm(x, None)
    for sl in (slice(0, 2), slice(rows - 2, rows)):
        assert_close(y[sl], ref_rms_norm(x[sl], None, 1e-6))
    del x, y
    torch.cuda.empty_cache()


# ---- layers --------------------------------------------------------------------------------


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_matches_llama_rmsnorm(kernel, device, dtype):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    m = LlamaRMSNorm(512, eps=1e-5).to(device=device, dtype=dtype)
    m.weight.data = (1 + 0.3 * torch.randn(512, device=device)).to(dtype)
    x = torch.randn(2, 9, 512, dtype=dtype, device=device)
    ref = m(x)
    y = kernel.layers.RMSNorm.forward(m, x)
    assert y.dtype == ref.dtype
    assert_close(y, ref.double(), scale=1)
    # fp32 weight with 16-bit activations (weights kept in fp32): output is fp32, as LLaMA's.
    m32 = LlamaRMSNorm(512, eps=1e-5).to(device=device)
    m32.weight.data = 1 + 0.3 * torch.randn(512, device=device)
    y32 = kernel.layers.RMSNorm.forward(m32, x)
    assert y32.dtype == m32(x).dtype
    assert_close(y32, m32(x).double(), dtype)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("affine", ["none", "same", "fp32", "bias"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_matches_diffusers_rmsnorm(kernel, device, dtype, affine):
    from diffusers.models.normalization import RMSNorm

    m = RMSNorm(256, eps=1e-6, elementwise_affine=affine != "none", bias=affine == "bias")
    m = m.to(device)
    if affine in ("same", "bias"):
        m = m.to(dtype)
    if m.weight is not None:
        m.weight.data = (1 + 0.3 * torch.randn(256, device=device)).to(m.weight.dtype)
    if m.bias is not None:
        m.bias.data = 0.1 * torch.randn(256, device=device).to(m.bias.dtype)
    x = torch.randn(3, 11, 256, dtype=dtype, device=device)
    ref = m(x)
    y = kernel.layers.DiffusersRMSNorm.forward(m, x)
    assert y.dtype == ref.dtype
    # A bias adds one more rounding in both; compare with the tolerance of the output dtype.
    assert_close(y, ref.double(), y.dtype, scale=2 if affine == "bias" else 1)


@pytest.mark.parametrize("D", [2048, 4096, 8192])
@pytest.mark.parametrize("dtype", DTYPES)
def test_many_rows(kernel, device, dtype, D):
    """Hundreds of rows, a row count no block size divides: every block of a kernel that puts
    several rows in one (the CUDA staged path: up to 4 rows of a warp each, sharing the
    weight staged once per block) writes its own rows, with and without the residual add."""
    x = torch.randn(2, 333, D, dtype=dtype, device=device)
    w = make_weight("same", D, dtype, device)
    out = poisoned(x.shape, dtype, device)
    kernel.rms_norm(x, w, 1e-6, out=out)
    assert_close(out, ref_rms_norm(x, w, 1e-6))
    res = torch.randn_like(x)
    want_res = res + x
    kernel.fused_add_rms_norm(x, res, w, 1e-6)
    assert torch.equal(res, want_res), "residual must be the rounded sum"
    assert_close(x, ref_rms_norm(want_res, w, 1e-6))


@pytest.mark.parametrize("wkind", ["none", "same", "fp32"])
@pytest.mark.parametrize("D", [64, 1000, 2048, 4096, 5120, 8192, 16384])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_dense_rows_many(kernel, device, dtype, D, wkind):
    """Grids of several waves down the dense path (rms_norm.cu: one or two 16-byte vectors a
    thread, rows at one stride in 32 bits) at the defaults on sm_90: rows of 8 to 2048 vectors
    (rms_norm up to 512 vectors, D <= 4096 in 16 bits: 256-thread blocks of two vectors a
    thread; D = 1000: lanes past the row's end; 5120 and 8192: 512-thread blocks of two
    vectors a thread; 16384: over its cap, the other paths), a row count no block size
    divides, x and out as slices of wider rows, an fp32 out, LlamaRMSNorm's rounding, and
    fused_add_rms_norm (512-thread blocks) on strided x and residual. rms_norm's part has at
    most 8 MiB of x, under both layouts' size limits (2047 rows at D = 2048 in 16 bits: 1024
    blocks, two waves). Every output element written; nothing outside the views."""
    if device.type != "cuda":
        pytest.skip("CUDA: the dense path's grids (the CPU kernels have no such path)")
    rows = 3 * 1367
    item = torch.tensor([], dtype=dtype).element_size()
    n = min(rows, (8 << 20) // (D * item) - 1)
    x = torch.randn(n, D + 16, dtype=dtype, device=device)[:, 8 : 8 + D]
    w = make_weight(wkind, D, dtype, device)
    big = poisoned((n, D + 8), dtype, device)
    out = big[:, :D]
    kernel.rms_norm(x, w, 1e-6, out=out)
    assert_close(out, ref_rms_norm(x, w, 1e-6))
    assert torch.isnan(big[:, D:]).all(), "wrote outside out"
    if w is not None:
        if wkind == "fp32" and dtype != torch.float32:
            out32 = poisoned(x.shape, torch.float32, device)
            kernel.rms_norm(x, w, 1e-6, out=out32)
            assert_close(out32, ref_rms_norm(x, w, 1e-6), torch.float32)
        out = poisoned(x.shape, torch.promote_types(dtype, w.dtype), device)
        kernel.rms_norm(x, w, 1e-6, out=out, round_before_weight=True)
        assert_close(out, ref_rms_norm(x, w, 1e-6, True, dtype), dtype)
    bx = torch.randn(rows, D + 8, dtype=dtype, device=device)
    br = torch.randn(rows, D + 24, dtype=dtype, device=device)
    xa, res = bx[:, :D], br[:, 16 : 16 + D]
    want_res = res + xa
    kernel.fused_add_rms_norm(xa, res, w, 1e-6)
    assert torch.equal(res, want_res), "residual must be the rounded sum"
    assert_close(xa, ref_rms_norm(want_res, w, 1e-6))


def check_rows(kernel, x, w, dtype):
    """rms_norm of x (rows of D) into a slice of wider rows whose margin must stay untouched,
    then with a weight into an output of the promoted dtype with LlamaRMSNorm's rounding, and
    into an fp32 output where that is the promoted dtype: every output element written and
    right."""
    D = x.shape[-1]
    big = poisoned((*x.shape[:-1], D + 8), dtype, x.device)
    out = big[..., :D]
    kernel.rms_norm(x, w, 1e-6, out=out)
    assert_close(out, ref_rms_norm(x, w, 1e-6))
    assert torch.isnan(big[..., D:]).all(), "wrote outside out"
    if w is not None:
        odt = torch.promote_types(dtype, w.dtype)
        out = poisoned(x.shape, odt, x.device)
        kernel.rms_norm(x, w, 1e-6, out=out, round_before_weight=True)
        assert_close(out, ref_rms_norm(x, w, 1e-6, True, dtype), dtype)
        if odt == torch.float32:
            kernel.rms_norm(x, w, 1e-6, out=out)
            assert_close(out, ref_rms_norm(x, w, 1e-6), torch.float32)


@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rms_norm_two_pass_rows(kernel, device, dtype, wkind):
    """The two-pass path at the defaults on sm_90 (rms_norm.cu: rows of 1024 16-byte vectors,
    D = 8192 in 16 bits, from 64 MiB of x; one row a block of 512 threads, two vectors a thread
    a pass, the row read twice): x as a slice of wider rows (a row stride the kernel must
    follow), out a slice with a margin that must stay untouched, an fp32 out and LlamaRMSNorm's
    rounding. On other devices the same call takes the other paths. Every output element
    written; nothing outside out."""
    if device.type != "cuda":
        pytest.skip("CUDA: the two-pass path's grids (the CPU kernels have no such path)")
    D = 8192
    rows = (64 << 20) // (D * 2) + 5  # just over the 64 MiB threshold
    x = torch.randn(rows, D + 8, dtype=dtype, device=device)[:, 8:]
    check_rows(kernel, x, make_weight(wkind, D, dtype, device), dtype)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("D", [768, 2048, 4104, 5120, 8192])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rms_norm_register_rows(kernel, device, dtype, D, wkind, layout):
    """Grids of several waves of 16-bit rows past the dense path's 8 MiB of x: on sm_90 at the
    defaults, rows of 513-1024 vectors take the register path (rms_norm.cu, rms_norm_kernel,
    4 vectors a thread, the weight loaded after the reduction; D = 4104 is 513 vectors in
    groups of 160 threads, lanes past the row's end in the last chunk), the shorter rows the
    dense one. x as the transposed view of a [2, rows, D] tensor (rows not at one stride: the
    general row offset), out a slice of wider rows, an fp32 out and LlamaRMSNorm's rounding.
    Every output element written; nothing outside out."""
    if device.type != "cuda":
        pytest.skip("CUDA: the register path's grids (the CPU kernels have no such path)")
    rows = 2 * 1367
    if layout == "contiguous":
        x = torch.randn(rows, D, dtype=dtype, device=device)
    else:
        x = torch.randn(2, rows // 2, D, dtype=dtype, device=device).transpose(0, 1)
    check_rows(kernel, x, make_weight(wkind, D, dtype, device), dtype)


# ---- fused_add_rms_norm (vLLM / FlashInfer) ---------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_add_rms_norm_reference(kernel, device, dtype, D, wkind, layout):
    """residual <- residual + x, rounded to its dtype (exactly what `residual + x` gives);
    x <- rms_norm(that rounded sum) [* weight], rounded once."""
    x = make_input((3, 5, D), dtype, device, layout)
    res = make_input((3, 5, D), dtype, device, layout)
    w = make_weight(wkind, D, dtype, device)
    want_res = res + x
    x0 = x.clone()
    got_x, got_res = kernel.fused_add_rms_norm(x, res, w, 1e-6)
    assert got_x is x and got_res is res
    assert torch.equal(res, want_res), "residual must be the rounded sum"
    assert not torch.equal(x, x0)
    assert_close(x, ref_rms_norm(want_res, w, 1e-6))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_add_rms_norm_views(kernel, device, dtype):
    """Rows as views: x and residual both strided slices of wider buffers; nothing outside them
    is written. And the in-place semantics of repeated decoder layers: the residual stream
    accumulates and each step normalizes the new sum."""
    D = 1024
    bx = poisoned((6, D + 16), dtype, device)
    br = poisoned((6, D + 8), dtype, device)
    x, res = bx[:, 8 : 8 + D], br[:, :D]
    x.copy_(torch.randn(6, D, device=device))
    res.copy_(torch.randn(6, D, device=device))
    w = make_weight("same", D, dtype, device)
    want_res = res + x
    kernel.fused_add_rms_norm(x, res, w, 1e-5)
    assert torch.equal(res, want_res)
    assert_close(x, ref_rms_norm(want_res, w, 1e-5))
    assert torch.isnan(bx[:, :8]).all() and torch.isnan(bx[:, 8 + D :]).all()
    assert torch.isnan(br[:, D:]).all()
    for _ in range(3):
        h = torch.randn(6, D, dtype=dtype, device=device)
        want_res = res + h
        kernel.fused_add_rms_norm(h, res, w, 1e-5)
        assert torch.equal(res, want_res)
        assert_close(h, ref_rms_norm(want_res, w, 1e-5))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("shape", [(1, 2048), (2048,), (1, 1, 1), (0, 2048), (4, 0)])
def test_fused_add_rms_norm_edge_shapes(kernel, device, shape):
    x = torch.randn(shape, device=device)
    res = torch.randn(shape, device=device)
    w = torch.randn(shape[-1], device=device)
    want_res = res + x
    kernel.fused_add_rms_norm(x, res, w)
    assert torch.equal(res, want_res)
    if x.numel():
        assert_close(x, ref_rms_norm(want_res, w, 1e-6))


@pytest.mark.kernels_ci
def test_fused_add_rms_norm_opcheck(kernel, device):
    for dtype in DTYPES:
        x = torch.randn(3, 64, dtype=dtype, device=device)
        res = torch.randn(3, 64, dtype=dtype, device=device)
        w = torch.randn(64, dtype=dtype, device=device)
        torch.library.opcheck(kernel.ops.fused_add_rms_norm, (x, res, w, 1e-6))
        torch.library.opcheck(kernel.ops.fused_add_rms_norm, (x, res, None, 1e-5))


@pytest.mark.kernels_ci
def test_fused_add_rms_norm_compile(kernel, device):
    """fullgraph (no graph break) with the in-place op functionalized; dynamic batch without
    recompiling."""
    w = torch.randn(256, dtype=torch.bfloat16, device=device)

    def f(x, res):
        x, res = x * 2, res.clone()
        kernel.fused_add_rms_norm(x, res, w, 1e-6)
        return x + 1, res

    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True, dynamic=True)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for b in (2, 3, 5, 8):
            x = torch.randn(b, 16, 256, dtype=torch.bfloat16, device=device)
            res = torch.randn(b, 16, 256, dtype=torch.bfloat16, device=device)
            got, want = cf(x, res), f(x, res)
            assert torch.equal(got[1], want[1])
            assert_close(got[0], want[0].double(), scale=2)  # the +1 rounds once more


@pytest.mark.kernels_ci
def test_fused_add_rms_norm_bad_inputs(kernel, device):
    dt = torch.bfloat16
    x = torch.randn(4, 64, dtype=dt, device=device)
    res = torch.randn(4, 64, dtype=dt, device=device)
    f = kernel.fused_add_rms_norm
    with pytest.raises(RuntimeError, match="residual"):
        f(x, torch.randn(4, 64, device=device), None)
    with pytest.raises(RuntimeError, match="residual"):
        f(x, torch.randn(4, 65, dtype=dt, device=device), None)
    with pytest.raises(RuntimeError, match="residual"):
        f(x, x, None)  # the same memory
    with pytest.raises(RuntimeError, match="residual"):
        f(x, torch.randn(64, 8, dtype=dt, device=device).t()[:4], None)
    with pytest.raises(RuntimeError, match="weight"):
        f(x, res, torch.randn(64, dtype=torch.float16, device=device))
    with pytest.raises(RuntimeError, match="weight"):
        f(x, res, torch.randn(32, dtype=dt, device=device))
    with pytest.raises(RuntimeError, match="eps"):
        f(x, res, None, -1.0)
    with pytest.raises(RuntimeError, match="input"):
        f(torch.randn(1, 64, dtype=dt, device=device).expand(4, 64), res, None)
    with pytest.raises(RuntimeError, match="input"):
        f(torch.ones(4, 64, dtype=torch.int32, device=device), res, None)


@pytest.mark.parametrize("D", [32768, 49152, 65536])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_long_rows(kernel, device, dtype, D):
    """Rows past the DESIGN.md sizes: on CUDA the row-cached kernel would need more registers
    than a block of 768-1024 threads has, and the launcher falls back to streaming the row."""
    x = torch.randn(2, D, dtype=dtype, device=device)
    res = torch.randn(2, D, dtype=dtype, device=device)
    w = make_weight("same", D, dtype, device)
    out = poisoned(x.shape, dtype, device)
    kernel.rms_norm(x, w, 1e-6, out=out)
    assert_close(out, ref_rms_norm(x, w, 1e-6))
    want_res = res + x
    kernel.fused_add_rms_norm(x, res, w, 1e-6)
    assert torch.equal(res, want_res)
    assert_close(x, ref_rms_norm(want_res, w, 1e-6))

