"""Activations (gelu_tanh, silu, geglu, silu_and_mul): against float64 references on every
backend, dtype, layout and the DESIGN.md shape list; against PyTorch's own ops; opcheck;
torch.compile; bad inputs; the transformers and diffusers layers, directly and via kernelize."""

import math

import pytest
import torch
import torch.nn.functional as F

from conftest import (DTYPES, HAS_CUDA, LAYOUTS, assert_close, make_input, poisoned,
                      run_under_cpu_simd_settings)

HIDDEN_SIZES = [1, 7, 8, 768, 769, 2048, 3072, 5120, 5125, 8192, 16384]


# ---- float64 references ----------------------------------------------------------------------


def ref_gelu_tanh(x):
    x = x.double()
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_erf_exact(x):
    """x Phi(x) in float64 by erfc: no cancellation in the negative tail."""
    x64 = x.double()
    return x64 * 0.5 * torch.special.erfc(-x64 / math.sqrt(2))


def fp32_ulps(y, exact):
    """|y - exact| in units of fp32's last place at exact (float64; exact not 0)."""
    ulp = torch.finfo(torch.float32).eps * torch.pow(2.0, torch.floor(torch.log2(exact.abs())))
    return (y.double() - exact).abs() / ulp


def ref_gelu_erf(x):
    x = x.double()
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def ref_silu(x):
    x = x.double()
    return x * torch.sigmoid(x)


def halves(x):
    H = x.shape[-1] // 2
    return x[..., :H].double(), x[..., H:].double()


def ref_geglu(gelu):
    def ref(x):
        value, gate = halves(x)
        return value * gelu(gate)

    return ref


def ref_silu_and_mul(x):
    a, b = halves(x)
    return ref_silu(a) * b


# Each op: how to call it, its float64 reference, and PyTorch's own op in the input dtype.
ELEMENTWISE = {
    "gelu_tanh": (
        lambda k, x, **kw: k.gelu_tanh(x, **kw),
        ref_gelu_tanh,
        lambda x: F.gelu(x, approximate="tanh"),
    ),
    "silu": (lambda k, x, **kw: k.silu(x, **kw), ref_silu, F.silu),
}
GATED = {
    "geglu_tanh": (
        lambda k, x, **kw: k.geglu(x, "tanh", **kw),
        ref_geglu(ref_gelu_tanh),
        lambda x: x.chunk(2, -1)[0] * F.gelu(x.chunk(2, -1)[1], approximate="tanh"),
    ),
    "geglu_none": (
        lambda k, x, **kw: k.geglu(x, "none", **kw),
        ref_geglu(ref_gelu_erf),
        lambda x: x.chunk(2, -1)[0] * F.gelu(x.chunk(2, -1)[1]),
    ),
    "silu_and_mul": (
        lambda k, x, **kw: k.silu_and_mul(x, **kw),
        ref_silu_and_mul,
        lambda x: F.silu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1],
    ),
}
ALL_OPS = {**ELEMENTWISE, **GATED}


def out_shape(name, shape):
    return shape if name in ELEMENTWISE else (*shape[:-1], shape[-1] // 2)


# ---- references over shapes, dtypes, layouts ------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("D", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_reference(kernel, device, name, dtype, D, layout):
    """contiguous: one flat run of numel elements; strided / misaligned: row by row."""
    op, ref, _ = ELEMENTWISE[name]
    x = make_input((3, 5, D), dtype, device, layout)
    out = poisoned(x.shape, dtype, device)
    y = op(kernel, x, out=out)
    assert y is out
    assert_close(y, ref(x))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("H", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", GATED)
def test_gated_reference(kernel, device, name, dtype, H, layout):
    op, ref, _ = GATED[name]
    x = make_input((3, 5, 2 * H), dtype, device, layout)
    out = poisoned((3, 5, H), dtype, device)
    y = op(kernel, x, out=out)
    assert y is out
    assert_close(y, ref(x))


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("name", ALL_OPS)
def test_many_rows(kernel, device, name, strided):
    """Thousands of rows of a D that is not a power of two, contiguous or rows of x and out
    inside wider buffers: on CUDA the flat kernel (one vector a thread, the row of each vector
    from a multiply-shift division, rows at one stride each) where it applies, every row and
    both ends of each checked."""
    rows, D = 4099, 2752
    width = D if name in ELEMENTWISE else 2 * D
    dtype = torch.bfloat16
    g = torch.Generator(device=device).manual_seed(3)
    buf = 3 * torch.randn(rows, width + (64 if strided else 0), generator=g, device=device,
                          dtype=torch.float32).to(dtype)
    x = buf[:, :width]
    obuf = poisoned((rows, D + (32 if strided else 0)), dtype, device)
    out = obuf[:, :D]
    op, ref, _ = ALL_OPS[name]
    y = op(kernel, x, out=out)
    assert y is out
    assert_close(y, ref(x))
    if strided:  # nothing written beyond each row
        assert torch.isnan(obuf[:, D:].float()).all()


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ALL_OPS)
def test_matches_torch(kernel, device, name, dtype):
    """Within one rounding of PyTorch's own op in the same dtype (both round fp32 math once;
    the gated references round twice, at the activation and at the product)."""
    op, _, torch_op = ALL_OPS[name]
    x = 3 * torch.randn(7, 1024, dtype=dtype, device=device)
    assert_close(op(kernel, x), torch_op(x).double(), dtype)


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ALL_OPS)
def test_wide_range(kernel, device, name, dtype):
    """Tails and saturation: |x| up to 20 (fp16) or 80, where exp over- and underflows in fp32
    and the negative tail of GELU / SiLU falls below the smallest subnormal."""
    op, ref, _ = ALL_OPS[name]
    L = 20.0 if dtype == torch.float16 else 80.0
    ramp = torch.linspace(-L, L, 4096, device=device)
    x = torch.stack([ramp, ramp.flip(0)]).to(dtype)  # for gated ops: both signs in both halves
    assert_close(op(kernel, x), ref(x))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_erf_tail(kernel, device, dtype):
    """The erf GELU in ulps of the output dtype, the negative tail included, where PyTorch's
    0.5 x (1 + erf(x / sqrt(2))) cancels (thousands of fp32 ulps at x in [-4, -1.2), 0 below
    -5.5; F.gelu on the CPU is more than one ulp off from x = -4.4 in bf16 and from x = -3.2 in
    fp16): fp32 within 8 ulps of float64's
    x Phi(x) wherever Phi is normal (x > -13), bf16 and fp16 within one ulp of theirs (their
    subnormal spacing where fp16's result is subnormal). geglu with value half 1 is the GELU."""
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.linspace(-13, 10, 60001), 3 * torch.randn(60000, generator=g)])
    x = x.to(dtype)
    y = kernel.geglu(torch.cat([torch.ones_like(x), x]).view(1, -1).to(device), "none")
    y = y.view(-1).cpu()
    exact = gelu_erf_exact(x)
    info = torch.finfo(dtype)
    keep = (x > -13) & (exact.abs() > (1e-30 if dtype == torch.float32 else 0))
    ulp = info.eps * torch.pow(2.0, torch.floor(torch.log2(exact.abs())))
    ulp = torch.maximum(ulp, torch.tensor(info.smallest_normal * info.eps, dtype=ulp.dtype))
    err = ((y.double() - exact).abs() / ulp)[keep]
    bound = 8 if dtype == torch.float32 else 1
    assert err.max() <= bound, (err.max().item(), x[keep][err.argmax()].item())


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_special_values(kernel, device, name, dtype):
    """+inf, NaN, zeros, the largest finite values (x^3 and exp overflow): exactly PyTorch's
    results (x, NaN, 0, x, -0)."""
    op, _, torch_op = ELEMENTWISE[name]
    big = torch.finfo(dtype).max
    x = torch.tensor([float("inf"), float("nan"), 0.0, -0.0, big, -big], device=device).to(dtype)
    y, r = op(kernel, x), torch_op(x)
    assert torch.equal(y.isnan(), r.isnan())
    assert torch.equal(y[~y.isnan()], r[~r.isnan()]), f"{y} != {r}"


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 7), (16, 769), (8, 5125), (3, 7), (5, 1)])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_odd_rows_contiguous(kernel, device, name, dtype, shape):
    """Contiguous tensors with an odd D are one flat run: a vector path when numel allows it
    ((8, 7): 56 elements), the scalar one otherwise ((3, 7))."""
    op, ref, _ = ELEMENTWISE[name]
    x = torch.randn(shape, dtype=dtype, device=device)
    out = poisoned(shape, dtype, device)
    op(kernel, x, out=out)
    assert_close(out, ref(x))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("shape", [(1, 4096), (4096,), (1, 1, 2), (1, 2), (0, 64), (4, 0),
                                   (2, 0, 64)])
@pytest.mark.parametrize("name", ALL_OPS)
def test_edge_shapes(kernel, device, name, shape):
    """One row, 1-d, a single element (pair), empty tensors."""
    op, ref, _ = ALL_OPS[name]
    x = torch.randn(shape, device=device)
    y = op(kernel, x)
    assert y.shape == out_shape(name, shape)
    if y.numel():
        assert_close(y, ref(x))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ALL_OPS)
def test_two_level_rows(kernel, device, name, dtype):
    """Per-head slices of a fused projection (rows at two strides), and a view with three
    non-mergeable levels (copied to contiguous rows by the op)."""
    op, ref, _ = ALL_OPS[name]
    B, S, K, W = 2, 7, 4, 128
    fused = torch.randn(B, S, 3 * K * W, dtype=dtype, device=device)
    x = fused[..., : K * W].unflatten(-1, (K, W))
    out = poisoned(out_shape(name, x.shape), dtype, device)
    op(kernel, x, out=out)
    assert_close(out, ref(x))
    x3 = torch.randn(5, 3, 4, 2 * W, dtype=dtype, device=device)[..., :W].transpose(0, 1)
    assert_close(op(kernel, x3), ref(x3))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ALL_OPS)
def test_strided_out(kernel, device, name, dtype):
    """`out` a strided view into a larger buffer: every element of it written, nothing else."""
    op, ref, _ = ALL_OPS[name]
    x = torch.randn(9, 1024, dtype=dtype, device=device)
    n = out_shape(name, x.shape)[-1]
    big = poisoned((9, n + 16), dtype, device)
    out = big[:, 8 : 8 + n]
    op(kernel, x, out=out)
    assert_close(out, ref(x))
    assert torch.isnan(big[:, :8]).all() and torch.isnan(big[:, 8 + n :]).all(), "wrote outside"


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_in_place(kernel, device, name, dtype):
    op, ref, _ = ELEMENTWISE[name]
    for x in (torch.randn(6, 2048, dtype=dtype, device=device),
              torch.randn(6, 2056, dtype=dtype, device=device)[:, 1:2049]):
        expected = ref(x)
        y = op(kernel, x, out=x)
        assert y is x
        assert_close(x, expected)


# ---- PyTorch integration ---------------------------------------------------------------------


@pytest.mark.kernels_ci
def test_opcheck(kernel, device):
    for dtype in DTYPES:
        x = torch.randn(3, 64, dtype=dtype, device=device)
        y = torch.empty(3, 32, dtype=dtype, device=device)
        torch.library.opcheck(kernel.ops.gelu_tanh, (torch.empty_like(x), x))
        torch.library.opcheck(kernel.ops.silu, (torch.empty_like(x), x))
        torch.library.opcheck(kernel.ops.geglu, (y, x, "tanh"))
        torch.library.opcheck(kernel.ops.geglu, (y, x, "none"))
        torch.library.opcheck(kernel.ops.silu_and_mul, (y, x))


@pytest.mark.kernels_ci
def test_compile(kernel, device):
    """fullgraph (no graph break), dynamic batch without recompiling."""

    def f(x):
        h = kernel.gelu_tanh(x * 2) + kernel.silu(x)
        return kernel.geglu(h, "none") + kernel.geglu(h) + kernel.silu_and_mul(h)

    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True, dynamic=True)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for b in (2, 3, 5, 8):
            x = torch.randn(b, 16, 256, dtype=torch.bfloat16, device=device)
            # The eager run executes the same kernels on the same inputs; only the adds and the
            # *2 around them may be fused and rounded differently by the compiler.
            assert_close(cf(x), f(x).double(), scale=2)


@pytest.mark.kernels_ci
def test_bad_inputs(kernel, device):
    """Each error names the argument at the start of its message."""
    x = torch.randn(4, 64, dtype=torch.bfloat16, device=device)
    for name, (op, _, _) in ALL_OPS.items():
        with pytest.raises(RuntimeError, match="^input:"):
            op(kernel, torch.ones(4, 64, dtype=torch.int32, device=device))
        with pytest.raises(RuntimeError, match="^input:"):
            op(kernel, torch.randn(64, 4, device=device).t())  # last dim not contiguous
        with pytest.raises(RuntimeError, match="^input:"):
            op(kernel, torch.randn((), device=device))
        with pytest.raises(RuntimeError, match="^out:"):
            op(kernel, x, out=torch.empty(out_shape(name, x.shape), device=device))  # fp32
        with pytest.raises(RuntimeError, match="^out:"):
            op(kernel, x, out=torch.empty(4, 63, dtype=torch.bfloat16, device=device))
        with pytest.raises(RuntimeError, match="^out:"):
            shape = out_shape(name, (4, 128))
            bad = torch.empty(shape[::-1], dtype=torch.bfloat16, device=device).t()
            op(kernel, torch.randn(4, 128, dtype=torch.bfloat16, device=device), out=bad)
        if device.type == "cuda":
            with pytest.raises(RuntimeError, match="^out:"):
                op(kernel, x, out=torch.empty(out_shape(name, x.shape), dtype=x.dtype))
    for name, (op, _, _) in GATED.items():
        with pytest.raises(RuntimeError, match="^input:"):
            op(kernel, torch.randn(4, 65, dtype=torch.bfloat16, device=device))
    for bad in ("exact", "Tanh", ""):
        with pytest.raises(RuntimeError, match="^approximate:"):
            kernel.geglu(x, bad)


# ---- silu_mul: the gated MLP's two projections as separate tensors ----------------------------


@pytest.mark.parametrize("up_layout", LAYOUTS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("H", HIDDEN_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_mul_reference(kernel, device, dtype, H, layout, up_layout):
    """gate and up each in its own layout (rows at their own strides; misaligned: the scalar
    path), against float64, and bit for bit silu_and_mul of the two concatenated."""
    gate = make_input((3, 5, H), dtype, device, layout)
    up = make_input((3, 5, H), dtype, device, up_layout)
    out = poisoned((3, 5, H), dtype, device)
    assert kernel.silu_mul(gate, up, out=out) is out
    assert_close(out, ref_silu(gate.double()) * up.double())
    assert torch.equal(out, kernel.silu_and_mul(torch.cat([gate, up], -1)))


@pytest.mark.parametrize("views", ["halves", "separate"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_mul_many_rows(kernel, device, dtype, views):
    """Enough rows for every path's grid (the flat kernel on the GPU): gate and up as the two
    halves of one [gate | up] tensor (the pointers one row-half apart) or as two tensors."""
    H = 1536
    x = torch.randn(4000, 2 * H, dtype=dtype, device=device)
    gate, up = x.chunk(2, -1) if views == "halves" else (x[:, :H].clone(), x[:, H:].clone())
    out = kernel.silu_mul(gate, up)
    assert out.is_contiguous() and out.shape == (4000, H)
    assert_close(out, ref_silu_and_mul(x))
    assert torch.equal(out, kernel.silu_and_mul(x))


@pytest.mark.kernels_ci
def test_silu_mul_bad_inputs(kernel, device):
    """Each error names the argument at the start of its message."""
    g = torch.randn(4, 64, dtype=torch.bfloat16, device=device)
    with pytest.raises(RuntimeError, match="^gate:"):
        kernel.silu_mul(g.int(), g)
    with pytest.raises(RuntimeError, match="^gate:"):
        kernel.silu_mul(torch.randn(64, 4, dtype=g.dtype, device=device).t(), g)
    with pytest.raises(RuntimeError, match="^up:"):
        kernel.silu_mul(g, torch.randn(4, 65, dtype=g.dtype, device=device))
    with pytest.raises(RuntimeError, match="^up:"):
        kernel.silu_mul(g, g.float())
    with pytest.raises(RuntimeError, match="^out:"):
        kernel.silu_mul(g, g, out=torch.empty(4, 64, device=device))
    with pytest.raises(RuntimeError, match="^out:"):
        kernel.silu_mul(g, g, out=torch.empty(4, 32, dtype=g.dtype, device=device))
    if device.type == "cuda":
        with pytest.raises(RuntimeError, match="^up:"):
            kernel.silu_mul(g, g.cpu())
    x = torch.randn(3, 32, dtype=g.dtype, device=device)
    torch.library.opcheck(kernel.ops.silu_mul, (torch.empty_like(x), x, torch.randn_like(x)))


@pytest.mark.kernels_ci
def test_silu_mul_compile(kernel, device):
    """fullgraph (no graph break), the projections' outputs handed straight to the op: the
    eager result, bit for bit."""
    w = torch.randn(2, 256, 128, dtype=torch.bfloat16, device=device)

    def f(x):
        return kernel.silu_mul(x @ w[0], x @ w[1])

    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True)
    for b in (2, 5):
        x = torch.randn(b, 16, 256, dtype=torch.bfloat16, device=device)
        assert torch.equal(cf(x), f(x))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_CUDA, reason="CUDA only: > 2^31 elements")
def test_huge(backend):
    """More than 2^31 elements: 64-bit offsets, in the flat (gelu_tanh) and row (silu_and_mul,
    strided gelu_tanh) paths."""
    if backend != "cuda":
        pytest.skip("CUDA only")
    from conftest import load_kernel

    k = load_kernel("cuda")
    H = 4096
    rows = (2**31) // H + 3
    x = torch.randn(rows, 2 * H, dtype=torch.bfloat16, device="cuda")
    y = k.silu_and_mul(x)
    for sl in (slice(0, 2), slice(rows - 2, rows)):
        assert_close(y[sl], ref_silu_and_mul(x[sl]))
    del y
    g = k.gelu_tanh(x)
    for sl in (slice(0, 2), slice(rows - 2, rows)):
        assert_close(g[sl], ref_gelu_tanh(x[sl]))
    del g
    v = x[:, :H]  # strided rows, > 2^31 elements addressed
    g = k.gelu_tanh(v)
    for sl in (slice(0, 2), slice(rows - 2, rows)):
        assert_close(g[sl], ref_gelu_tanh(v[sl]))
    del x, v, g
    torch.cuda.empty_cache()


# ---- layers ----------------------------------------------------------------------------------


def _transformers_act(name):
    from transformers.activations import GELUTanh, SiLUActivation

    return {"GeluTanh": GELUTanh, "SiLU": SiLUActivation}[name]


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layer", ["GeluTanh", "SiLU"])
def test_layer_matches_transformers(kernel, device, dtype, layer):
    m = _transformers_act(layer)()
    x = torch.randn(2, 9, 768, dtype=dtype, device=device)
    ref = m(x)
    y = getattr(kernel.layers, layer).forward(m, x)
    assert y.dtype == ref.dtype
    assert_close(y, ref.double())


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_silu_and_mul(kernel, device, dtype):
    x = torch.randn(2, 9, 2 * 688, dtype=dtype, device=device)
    y = kernel.layers.SiluAndMul.forward(torch.nn.Module(), x)
    assert_close(y, ref_silu_and_mul(x))


@pytest.mark.kernels_ci
@pytest.mark.parametrize("approximate", ["tanh", "none"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_matches_diffusers_gelu(kernel, device, dtype, approximate):
    from diffusers.models.activations import GELU

    m = GELU(256, 512, approximate=approximate).to(device=device, dtype=dtype)
    x = torch.randn(2, 9, 256, dtype=dtype, device=device)
    ref = m(x)
    y = kernel.layers.DiffusersGELU.forward(m, x)
    assert y.dtype == ref.dtype
    assert_close(y, ref.double())


def ref_linear_gelu_tanh(x, w, b):
    y = F.linear(x.double(), w.double(), None if b is None else b.double())
    return F.gelu(y, approximate="tanh")


@pytest.mark.kernels_ci
@pytest.mark.parametrize("lead", [(2, 9), (37,), (1,), (0, 3)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_gelu_tanh(kernel, device, dtype, bias, lead):
    """Against float64 `gelu(linear(x), tanh)`. On CUDA with a bias (and more than one row) the
    GELU runs in cuBLASLt's epilogue on the fp32 accumulator (one rounding); elsewhere the
    product is rounded to the dtype before `gelu_tanh` rounds again (hence the doubled
    tolerance there)."""
    K, N = 256, 384
    x = torch.randn(*lead, K, dtype=dtype, device=device)
    w = (torch.randn(N, K, device=device) / math.sqrt(K)).to(dtype)
    b = torch.randn(N, dtype=dtype, device=device) if bias else None
    y = kernel.linear_gelu_tanh(x, w, b)
    assert y.shape == (*lead, N) and y.dtype == dtype
    # PyTorch takes cuBLASLt for more than one row (one row: the product, then the GELU).
    epilogue = device.type == "cuda" and bias and math.prod(lead) > 1
    assert_close(y, ref_linear_gelu_tanh(x, w, b), scale=1 if epilogue else 2)  # empty: shape


@pytest.mark.kernels_ci
def test_linear_gelu_tanh_compile(kernel, device):
    """fullgraph, and the compiled call gives the eager call's values (the same cuBLASLt call on
    CUDA, the same gelu_tanh kernel elsewhere; only the product may be ordered differently)."""
    x = torch.randn(3, 50, 256, dtype=torch.bfloat16, device=device)
    w = (torch.randn(512, 256, device=device) / 16).to(torch.bfloat16)
    b = torch.randn(512, dtype=torch.bfloat16, device=device)
    torch._dynamo.reset()
    cf = torch.compile(kernel.linear_gelu_tanh, fullgraph=True)
    assert_close(cf(x, w, b), kernel.linear_gelu_tanh(x, w, b).double())


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_diffusers_gelu_in_matmul(kernel, device, dtype):
    """diffusers' GELU(tanh) with the GELU in the projection's matmul; its erf GELU and a
    projection that is not a plain nn.Linear (a wrapper with its own forward, here adding 1)
    keep their own forward."""
    from diffusers.models.activations import GELU

    class Plus1Linear(torch.nn.Linear):
        def forward(self, x):
            return super().forward(x) + 1

    layer = kernel.layers.DiffusersGELUInMatmul
    x = torch.randn(2, 9, 256, dtype=dtype, device=device)
    for approximate in ("tanh", "none"):
        m = GELU(256, 512, approximate=approximate).to(device=device, dtype=dtype)
        # diffusers rounds the product to the dtype before its GELU; the epilogue does not.
        assert_close(layer.forward(m, x), m(x).double(), scale=2)
    m = GELU(256, 512, approximate="tanh").to(device=device, dtype=dtype)
    wrapped = Plus1Linear(256, 512).to(device=device, dtype=dtype)
    wrapped.load_state_dict(m.proj.state_dict())
    m.proj = wrapped
    assert_close(layer.forward(m, x), m(x).double())


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_matches_diffusers_geglu(kernel, device, dtype):
    from diffusers.models.activations import GEGLU

    m = GEGLU(256, 384).to(device=device, dtype=dtype)
    x = torch.randn(2, 9, 256, dtype=dtype, device=device)
    ref = m(x)
    y = kernel.layers.DiffusersGEGLU.forward(m, x)
    assert y.shape == ref.shape and y.dtype == ref.dtype
    # diffusers rounds gelu(gate) to the dtype before the product, the kernel rounds once.
    assert_close(y, ref.double(), scale=2)


class _LoadedLayer:
    """A kernels layer repository for a kernel already loaded by the fixture (the right
    backend on every machine); `kernelize` validates the layer and swaps `forward`."""

    def __init__(self, kernel, name):
        self._kernel = kernel
        self.layer_name = name

    def load(self):
        return getattr(self._kernel.layers, self.layer_name)

    def __str__(self):
        return f"ltx-kernels layer `{self.layer_name}`"


@pytest.mark.kernels_ci
def test_kernelize_gelu_in_matmul(kernel, device):
    """`DiffusersGELUInMatmul` passes kernelize's validation against diffusers' GELU and then
    computes `linear_gelu_tanh` with the module's own projection."""
    from diffusers.models.activations import GELU
    from kernels import Mode, kernelize, replace_kernel_forward_from_hub, use_kernel_mapping

    class TanhGELUHost(GELU):
        pass

    replace_kernel_forward_from_hub(TanhGELUHost, "DiffusersGELUInMatmul")
    model = TanhGELUHost(64, 256, approximate="tanh").to(device=device, dtype=torch.bfloat16)
    x = torch.randn(2, 5, 64, dtype=torch.bfloat16, device=device)
    mapping = {"DiffusersGELUInMatmul":
               {device.type: _LoadedLayer(kernel, "DiffusersGELUInMatmul")}}
    with torch.no_grad():
        with use_kernel_mapping(mapping, inherit_mapping=False):
            kernelize(model, mode=Mode.INFERENCE, device=device.type)
        assert model.forward.__func__ is kernel.layers.DiffusersGELUInMatmul.forward
        assert torch.equal(model(x), kernel.linear_gelu_tanh(x, model.proj.weight, model.proj.bias))


@pytest.mark.kernels_ci
def test_kernelize(kernel, device):
    """Every layer through `kernelize` (which validates it against the host class): the
    transformers activations by their hub names, diffusers' GELU / GEGLU and a SiluAndMul host
    attached with `replace_kernel_forward_from_hub` (on subclasses, leaving diffusers as is)."""
    from diffusers.models.activations import GEGLU, GELU
    from kernels import Mode, kernelize, replace_kernel_forward_from_hub, use_kernel_mapping

    class TanhGELU(GELU):
        pass

    class ErfGEGLU(GEGLU):
        pass

    class SiluAndMulHost(torch.nn.Module):
        def forward(self, x):
            return F.silu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1]

    replace_kernel_forward_from_hub(TanhGELU, "DiffusersGELU")
    replace_kernel_forward_from_hub(ErfGEGLU, "DiffusersGEGLU")
    replace_kernel_forward_from_hub(SiluAndMulHost, "SiluAndMul")
    names = ["DiffusersGELU", "GeluTanh", "SiLU", "DiffusersGEGLU", "SiluAndMul"]
    model = torch.nn.Sequential(
        TanhGELU(64, 256, approximate="tanh"),
        _transformers_act("GeluTanh")(),
        _transformers_act("SiLU")(),
        ErfGEGLU(256, 128),
        SiluAndMulHost(),
    ).to(device=device, dtype=torch.bfloat16)
    x = torch.randn(4, 64, dtype=torch.bfloat16, device=device)
    with torch.no_grad():
        mapping = {n: {device.type: _LoadedLayer(kernel, n)} for n in names}
        with use_kernel_mapping(mapping, inherit_mapping=False):
            kernelize(model, mode=Mode.INFERENCE, device=device.type)
        for m, n in zip(model, names):
            assert m.forward.__func__ is getattr(kernel.layers, n).forward, n
        y = model(x)
        # The same kernels called directly, with the model's own projections.
        h = kernel.silu(kernel.gelu_tanh(kernel.gelu_tanh(model[0].proj(x))))
        expected = kernel.silu_and_mul(kernel.geglu(model[3].proj(h), "none"))
    assert y.shape == (4, 64)
    assert torch.equal(y, expected)


# ---- the CPU backend's vector paths (ltx_kernels_cpu/activation_simd.h, simd.h) ----------------

_SIMD_CHILD = r"""
import sys, torch
from kernels import get_kernel
kw = {"backend": "cpu"} if torch.version.cuda else {}
k = get_kernel(sys.argv[2], version=1, **kw)
g = torch.Generator().manual_seed(7)
out = {}
specials = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 88.72, 88.7229,
                         -87.4, -103.9, -104.1, 1e-30, -1e-30, 3.0e38, -3.0e38])
for dt in (torch.float32, torch.bfloat16, torch.float16):
    x = torch.cat([torch.linspace(-120, 120, 100003), 4 * torch.randn(100000, generator=g)])
    x = x.to(dt)
    u = torch.randn(x.numel(), generator=g).to(dt)
    out[("silu", dt)] = k.silu(x)
    out[("gelu_tanh", dt)] = k.gelu_tanh(x)
    out[("silu_mul", dt)] = k.silu_mul(x, u)
    a, b = x[:200000].view(-1, 1000), u[:200000].view(-1, 1000)  # rows of 1000: SIMD + tails
    out[("silu_and_mul", dt)] = k.silu_and_mul(torch.cat([a, b], -1))
    out[("geglu", dt)] = k.geglu(torch.cat([b, a], -1), "tanh")
    out[("geglu_erf", dt)] = k.geglu(torch.cat([b, a], -1), "none")
    # the erf GELU alone over x (value half 1, one row of 2 x 200003: vectors and a tail)
    out[("gelu_erf", dt)] = k.geglu(torch.cat([torch.ones_like(x), x]).view(1, -1), "none")
    out[("x", dt)] = x
    s = specials.to(dt)
    out[("silu special", dt)] = k.silu(s)
    out[("gelu_tanh special", dt)] = k.gelu_tanh(s)
    s16 = s.repeat(16)  # a row of 16 x 14: every special value in a vector's lanes
    out[("gelu_erf special", dt)] = k.geglu(torch.cat([torch.ones_like(s16), s16]).view(1, -1),
                                            "none").view(-1)
# The 16-bit loads and stores: silu_mul(g, x) is one fp32 product silu(g) * x rounded once,
# so with silu(g) taken from the kernel's own fp32 call each result is known exactly. x: every
# bit pattern of each 16-bit dtype (g = 1.5), then 2^21 random values with random g (products
# with every pattern of dropped bits, ties included).
for dt in (torch.bfloat16, torch.float16):
    x = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dt)
    gate = torch.full_like(x, 1.5)
    x = torch.cat([x, torch.randn(1 << 21, generator=g).to(dt)])
    gate = torch.cat([gate, 3 * torch.randn(1 << 21, generator=g).to(dt)])
    silu_g = k.silu_mul(gate.float(), torch.ones(x.numel()))
    out[("convert", dt)] = (silu_g, x, k.silu_mul(gate, x))
torch.save(out, sys.argv[1])
"""


def test_cpu_simd_paths(tmp_path):
    """The CPU activations under LTX_CPU_SIMD 0 (the scalar loops), 1 (AVX2 + FMA + F16C) and
    the default (the widest the CPU has), each in its own process (the setting is read once):
    every path within the dtype's tolerance of the float64 references, the special values
    (infinities, NaN, signed zeros, exp's overflow and underflow edges) bit for bit the scalar
    loop's, the 16-bit conversions (simd.h) bit for bit c10's (every bf16 and fp16 bit
    pattern, and random products rounded once: ties, denormals, overflow, NaN as c10's), and
    on a CPU with AVX2 the vector results not all equal to the scalar loop's (the vector path
    ran)."""
    results = run_under_cpu_simd_settings(_SIMD_CHILD, tmp_path)
    scalar = results["0"]
    for setting, out in results.items():
        for (name, dt), y in out.items():
            ref_y = scalar[(name, dt)]
            if name == "x":  # the input, for the accuracy check below
                assert torch.equal(y, ref_y)
            elif name == "convert":
                silu_g, x, y = y
                product = silu_g * x.float()
                expected = product.to(dt)
                dropped = product.view(torch.int32) & (0xFFFF if dt == torch.bfloat16 else 0x1FFF)
                half = 0x8000 if dt == torch.bfloat16 else 0x1000
                assert (dropped == half).sum() > 5  # ties to round to even
                nan = expected.isnan()
                assert torch.equal(y.isnan(), nan), (setting, dt)
                assert torch.equal(y[~nan].view(torch.int16), expected[~nan].view(torch.int16)), (
                    setting, dt, (y != expected).nonzero()[:5])
                assert torch.equal(y[nan].view(torch.int16) & 0x7FFF,  # c10's NaN
                                   torch.full_like(y[nan].view(torch.int16),
                                                   0x7FC0 if dt == torch.bfloat16 else 0x7E00))
            elif "special" in name:
                assert torch.equal(y.isnan(), ref_y.isnan()), (setting, name, dt)
                m = ~y.isnan()
                assert torch.equal(y[m], ref_y[m]), (setting, name, dt, y, ref_y)
                assert torch.equal(torch.signbit(y[m]), torch.signbit(ref_y[m]))
            else:
                assert_close(y, ref_y.double(), dt)
    capability = torch.backends.cpu.get_cpu_capability()
    if capability in ("AVX2", "AVX512"):
        f32 = torch.float32
        assert not torch.equal(results["1"][("silu", f32)], scalar[("silu", f32)])
        assert not torch.equal(results[None][("gelu_tanh", f32)], scalar[("gelu_tanh", f32)])
        assert not torch.equal(results["1"][("gelu_erf", f32)], scalar[("gelu_erf", f32)])
    # The erf GELU's own accuracy, the vector formula (activation_simd.h, gelu_erf_v) and the
    # scalar loop's (activation_math.h, gelu_erf: the same formula with expf): within 8
    # fp32 ulps of x * Phi(x) in float64 wherever Phi(x) is normal (x > -13; below, Phi and the
    # result lose bits as denormals). PyTorch's 0.5 x (1 + erf(x / sqrt(2))) is thousands of
    # ulps off in the negative tail (1 + erf cancels).
    x = scalar[("x", torch.float32)]
    exact = gelu_erf_exact(x)
    normal = (x > -13) & (exact.abs() > 1e-30)
    for setting, out in results.items():
        err = fp32_ulps(out[("gelu_erf", torch.float32)].view(-1), exact)[normal]
        assert err.max() <= 8, (setting, err.max(), x[normal][err.argmax()])
