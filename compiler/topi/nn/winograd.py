"""conv2d by Winograd's minimal filtering F(m x m, 3 x 3) on NCHW[x]c tensors.

A 3x3, stride-1 convolution computes each m x m output tile from an (m + 2) x (m + 2) input
tile with (m + 2)^2 multiplications per input and output channel instead of 9 m^2: 2.25x fewer
for m = 2 (the tiles here; m = 4 would save 4x, but its transforms spelled out as below take
seconds to lower). With a = m + 2:

    V[e, n, t, c] = (B^T d_t B)[e, n]          the input tile t of channel c, transformed
                                               (stored [a, a, tiles, C / ic_bn, ic_bn])
    U[e, n, k, c] = (G g_kc G^T)[e, n]         the 3x3 filter, transformed once (numpy)
    M[e, n, t, k] = sum_c U[e, n, k, c] V[e, n, t, c]        a^2 independent GEMMs
                                               (stored [a, a, K / oc_bn, tiles, oc_bn])
    Y_t[k]        = A^T M[:, :, t, k] A        the m x m output tile

The transforms' matrices hold small integers and fractions, so each transformed value is a
short sum of the tile's elements: the computes below spell out those sums (terms with a zero
coefficient left out) and pick one by the position (e, n) or (y mod m, x mod m), which unrolled
loops turn into constants.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as Fr

import numpy as np

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag
from .pad import pad

# (A^T [m, a], B^T [a, a], G [a, 3]) for the interpolation points 0, +-1 and infinity
MATRICES = {
    2: (
        [[1, 1, 1, 0], [0, 1, -1, -1]],
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]],
    ),
}


def _check(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if m not in MATRICES:
        raise OperatorError(f"winograd: output tiles of {m}x{m}; supported are {sorted(MATRICES)}")
    return tuple(np.array(x, dtype=object) for x in MATRICES[m])  # type: ignore[return-value]


def winograd_weight(weight: np.ndarray, m: int, oc_bn: int) -> np.ndarray:
    """A [K, C, 3, 3] filter transformed for F(m, 3) and laid out for the GEMMs:
    U [a, a, K / oc_bn, C, oc_bn] (float32)."""
    _, _, g = _check(m)
    k, c, kh, kw = weight.shape
    if (kh, kw) != (3, 3) or k % oc_bn:
        raise OperatorError(f"winograd: a 3x3 filter with {oc_bn} | K expected, got {weight.shape}")
    g = g.astype(np.float64)
    u = np.einsum("ei,kcij,nj->enkc", g, weight.astype(np.float64), g)
    a = m + 2
    return np.ascontiguousarray(
        u.reshape(a, a, k // oc_bn, oc_bn, c).transpose(0, 1, 2, 4, 3), dtype=np.float32
    )


def _sum(terms: list[tuple[Fr, object]], dtype: str):
    """sum of coef * value, written with as few multiplications as the coefficients allow."""
    out = None
    for coef, value in terms:
        if coef == 0:
            continue
        term = value if abs(coef) == 1 else value * te.const(float(abs(coef)), dtype)
        if out is None:
            out = -term if coef < 0 else term
        else:
            out = out - term if coef < 0 else out + term
    return out if out is not None else te.const(0.0, dtype)


def _by_position(i, j, n: int, value):
    """value(i0, j0) at the constant position (i, j) = (i0, j0) of an n x n grid."""
    out = value(n - 1, n - 1)
    for i0, j0 in reversed(list(itertools.product(range(n), range(n)))[:-1]):
        out = te.if_then_else(te.all(i == i0, j == j0), value(i0, j0), out)
    return out


def conv2d_winograd_NCHWc(data: Tensor, u: Tensor, padding: int, m: int) -> Tensor:
    """data [1, C/ic_bn, H, W, ic_bn], transformed filter u [a, a, K/oc_bn, C, oc_bn]
    (`winograd_weight`) -> [1, K/oc_bn, OH, OW, oc_bn]: a 3x3, stride-1 conv with zero padding
    `padding` on every side."""
    at, bt, _ = _check(m)
    a = m + 2
    n, cb, h, w, ic_bn = data.shape
    ua, ub, kb, uc, oc_bn = u.shape
    if n != 1 or (ua, ub) != (a, a) or uc != cb * ic_bn:
        raise OperatorError(f"winograd: data {data.shape} and filter {u.shape} do not match")
    oh, ow = h + 2 * padding - 2, w + 2 * padding - 2
    th, tw = -(-oh // m), -(-ow // m)
    dtype = data.dtype
    dpad = pad(
        data,
        (0, 0, padding, padding, 0),
        (0, 0, th * m + 2 - h - padding, tw * m + 2 - w - padding, 0),
        name="winograd_pad",
    )

    def transformed(t, ci, cj):
        def value(e0, n0):
            def tile(i, j):
                return dpad[0, ci, (t // tw) * m + i, (t % tw) * m + j, cj]

            rows = [[(bt[e0][i], tile(i, j)) for i in range(a)] for j in range(a)]
            return _sum([(bt[n0][j], _sum(rows[j], dtype)) for j in range(a)], dtype)

        return value

    v = te.compute(
        (a, a, th * tw, cb, ic_bn),
        lambda e, n_, t, ci, cj: _by_position(e, n_, a, transformed(t, ci, cj)),
        name="winograd_V",
        tag=tag.WINOGRAD_TRANSFORM,
    )
    ci, cj = te.reduce_axis(cb, "ci"), te.reduce_axis(ic_bn, "cj")
    mm = te.compute(
        (a, a, kb, th * tw, oc_bn),
        lambda e, n_, k, t, ob: te.sum(
            v[e, n_, t, ci, cj] * u[e, n_, k, ci * ic_bn + cj, ob], axis=[ci, cj]
        ),
        name="winograd_M",
        tag=tag.WINOGRAD_GEMM,
    )

    def output(k, t, ob, i0, j0):
        rows = [[(at[i0][e], mm[e, n_, k, t, ob]) for e in range(a)] for n_ in range(a)]
        return _sum([(at[j0][n_], _sum(rows[n_], dtype)) for n_ in range(a)], dtype)

    return te.compute(
        (1, kb, oh, ow, oc_bn),
        lambda b, k, y, x, ob: _by_position(
            y % m, x % m, m, lambda i0, j0: output(k, (y // m) * tw + x // m, ob, i0, j0)
        ),
        name="conv2d_winograd",
        tag=tag.CONV2D_WINOGRAD,
    )
