"""The polynomial of the erf GELU on both backends (common/activation_math.h, `erfc_scaled`).

    python3 tools/fit_gelu_erf.py      # needs numpy and mpmath; prints erfc_scaled's body

gelu(x) = x * Phi(x), Phi(x) = erfc(-z) / 2, z = x / sqrt(2). With

    erfc(|z|) = exp(-x^2 / 2) * t * Q(t),   t = 1 / (1 + |z| * T_SCALE),

over |z| in [0, Z_MAX] (beyond, erfc(|z|) / 2 is below the smallest fp32 denormal), Phi is
1 - erfc(|z|) / 2 for z > 0 and erfc(|z|) / 2 otherwise: one formula for every x, and the
negative tail without the cancellation of 1 + erf(z).

Q is a least-squares fit of t * Q(t)'s relative error on Chebyshev nodes in z, against
erfc(z) exp(z^2) computed with mpmath at 40 digits. Its coefficients are then rounded to fp32,
and the constant term is set so that Q(1) (z = 0) sums to exactly 1 in fp32 (Horner's
additions at t = 1), so that Phi(0) is exactly 1/2 and gelu(x) = x / 2 bit for bit near 0, as the
scalar formula. The script prints the fit's largest relative error over a dense grid (Q in
fp32, each step rounded: the FMAs of the CUDA kernels and the CPU's vectors round less; the
kernels' measured error in ulps is in PERFORMANCE.md).
"""
from __future__ import annotations

import mpmath as mp
import numpy as np

mp.mp.dps = 40
Z_MAX = 10.5      # erfc(10.5) / 2 < 2^-149
Q_DEGREE = 10
T_SCALE = 0.4     # t = 1 / (1 + T_SCALE * |z|)


def erfc_scaled(z):
    return mp.erfc(z) * mp.exp(z * z)


def fit_q() -> np.ndarray:
    n = 6000
    zs = [Z_MAX * (1 - mp.cos(mp.pi * (k + 0.5) / n)) / 2 for k in range(n)]
    z = np.array([float(v) for v in zs])
    y = np.array([float(erfc_scaled(v)) for v in zs])
    t = 1 / (1 + T_SCALE * z)
    basis = np.vander(t, Q_DEGREE + 1, increasing=True) * t[:, None]
    c, *_ = np.linalg.lstsq(basis / y[:, None], np.ones_like(y), rcond=None)
    c = c.astype(np.float32)
    top = np.float32(c[-1])
    for v in c[-2:0:-1]:          # Horner at t = 1, in fp32, down to the constant term
        top = np.float32(top + v)
    c[0] = np.float32(1) - top    # exact (Sterbenz): top is near 1
    assert np.float32(top + c[0]) == 1
    return c


def max_error(c: np.ndarray) -> float:
    """t Q(t)'s largest relative error with Q evaluated in fp32 as the kernel does (Horner,
    each step rounded; the kernel may fuse its steps into FMAs, which round less)."""
    grid = np.linspace(0, Z_MAX, 20001)
    ref = np.array([float(erfc_scaled(mp.mpf(v))) for v in grid])
    t = (1 / (1 + T_SCALE * grid)).astype(np.float32)
    q = np.full_like(t, c[-1])
    for v in c[-2::-1]:
        q = (q * t).astype(np.float32) + v
    return float(np.max(np.abs(t.astype(np.float64) * q / ref - 1)))


def main() -> None:
    q = fit_q()
    print(f"// Q: degree {Q_DEGREE}, t = 1 / (1 + {T_SCALE} |z|), largest relative error of "
          f"t Q(t) {max_error(q):.2e} (in fp32, no FMA)")
    print(f"  V q = t * {float(q[-1]):.9g}f + {float(q[-2]):.9g}f;")
    for v in q[-3:0:-1]:
        print(f"  q = q * t + {float(v):.9g}f;")
    print(f"  return t * (q * t + {float(q[0]):.9g}f);")


if __name__ == "__main__":
    main()
