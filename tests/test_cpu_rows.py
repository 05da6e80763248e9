"""The CPU row helpers every norm, AdaLN and rope kernel shares (ltx_kernels_cpu/common.h:
float_row, CachedRow, out_row / distinct_out_row, finish_row): a row's 16-bit operands
converted whole through simd.h's vectors, fp32 rows read and written in place. What they must
keep: the same bits under every LTX_CPU_SIMD setting (0 is c10's scalar conversions, one
element at a time, what the kernels did before run Z), and in-place calls (out = x, AdaLN's
residual_out = x or y) equal to out-of-place ones bit for bit."""

import torch

from conftest import run_under_cpu_simd_settings

_CHILD = r"""
import sys, torch
from kernels import get_kernel
kw = {"backend": "cpu"} if torch.version.cuda else {}
k = get_kernel(sys.argv[2], version=1, **kw)
g = torch.Generator().manual_seed(11)
out = {}
def rnd(*shape, dt, scale=1.0):
    return (scale * torch.randn(*shape, generator=g)).to(dt)
# D: below one vector, vectors plus a tail, several vectors; rows: some samples' worth
for dt in (torch.float32, torch.bfloat16, torch.float16):
    for D in (12, 40, 1032):
        x, y = rnd(2, 9, D, dt=dt, scale=3.0), rnd(2, 9, D, dt=dt)
        for wdt in dict.fromkeys((dt, torch.float32)):
            w, b = 1 + rnd(D, dt=wdt, scale=0.2), rnd(D, dt=wdt, scale=0.1)
            for rbw in (False, True):
                out[("rms_norm", dt, D, wdt, rbw)] = k.rms_norm(x, w, 1e-6, round_before_weight=rbw)
            xi, ri = x.clone(), y.clone()
            k.fused_add_rms_norm(xi, ri, w, 1e-6)
            out[("fused_add_rms_norm", dt, D, wdt)] = (xi, ri)
            for per_token in (False, True):
                m = 9 if per_token else 1
                sc, sh, gt = (rnd(2, m, D, dt=wdt, scale=0.3) for _ in range(3))
                for norm in ("rms", "layer"):
                    aff = dict(weight=w, bias=b) if norm == "layer" else dict(weight=w)
                    out[("adaln", dt, D, wdt, per_token, norm)] = k.adaln(x, sc, sh, norm=norm, **aff)
                    out[("gated_residual_adaln", dt, D, wdt, per_token, norm)] = \
                        k.gated_residual_adaln(x, y, gt, sc, sh, norm=norm, **aff)
                out[("gated_residual", dt, D, wdt, per_token)] = k.gated_residual(x, y, gt)
        # in place against out of place (fp32: rows written where they are read)
        w, sc, sh, gt = 1 + rnd(D, dt=dt, scale=0.2), *(rnd(2, 1, D, dt=dt, scale=0.3) for _ in range(3))
        cos, sin = rnd(9, D, dt=dt), rnd(9, D, dt=dt)
        cases = {
            "rms_norm": lambda o: k.rms_norm(x if o is None else o, w, 1e-6, out=o),
            "adaln": lambda o: k.adaln(x if o is None else o, sc, sh, out=o),
            "gated_residual": lambda o: k.gated_residual(x if o is None else o, y, gt, out=o),
            "rms_norm_rope": lambda o: k.rms_norm_rope(x if o is None else o, w, cos, sin, 1e-6,
                                                       interleaved=True, out=o),
        }
        if D % 2 == 0:
            c4, s4 = cos.view(1, 9, 1, D), sin.view(1, 9, 1, D)
            cases["rope"] = lambda o: k.rope((x if o is None else o).view(2, 9, 1, D), c4, s4,
                                             interleaved=False,
                                             out=None if o is None else o.view(2, 9, 1, D))
        for name, f in cases.items():
            xi = x.clone()
            f(xi)
            out[("in place " + name, dt, D)] = (f(None).reshape(x.shape), xi)
        for res_is in ("x", "y"):
            xi, yi = x.clone(), y.clone()
            o, res = k.gated_residual_adaln(xi, yi, gt, sc, sh,
                                            residual_out=xi if res_is == "x" else yi)
            out[("in place gated_residual_adaln residual_out=" + res_is, dt, D)] = (
                torch.cat([o, res]), torch.cat(k.gated_residual_adaln(x, y, gt, sc, sh)))
        # the norm + rope ops with pair tables and fp32 tables
        cp, sp = k.rope_pair_tables(cos.float(), sin.float(), interleaved=True)
        out[("rms_norm_rope_qk pairs", dt, D)] = k.rms_norm_rope_qk(
            x, y, w, w, cp, sp, 1e-6, interleaved=True, pair_tables=True)
torch.save(out, sys.argv[1])
"""


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int32) if t.dtype == torch.float32 else t.view(torch.int16)


def test_cpu_rows_exact(tmp_path):
    results = run_under_cpu_simd_settings(_CHILD, tmp_path)
    scalar = results["0"]
    assert len(scalar) > 200
    for setting, out in results.items():
        assert out.keys() == scalar.keys()
        for key, got in out.items():
            got = got if isinstance(got, tuple) else (got,)
            want = scalar[key] if isinstance(scalar[key], tuple) else (scalar[key],)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype and torch.equal(_bits(g), _bits(w)), (setting, key)
            if key[0].startswith("in place"):
                a, b = got
                assert torch.equal(_bits(a), _bits(b)), (setting, key)
