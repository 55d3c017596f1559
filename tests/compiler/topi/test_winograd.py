"""conv2d by Winograd's F(m x m, 3 x 3) on NCHW[x]c tensors against the direct convolution."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.errors import OperatorError
from compiler.topi import nn, testing, x86
from compiler.topi.nn.winograd import MATRICES


@pytest.mark.parametrize("m", sorted(MATRICES))
def test_matrices_compute_a_1d_correlation(m):
    """A^T [(G g) * (B^T d)] = the m outputs of correlating d (m + 2 values) with g (3)."""
    at, bt, g = (np.array(x, dtype=float) for x in MATRICES[m])
    rng = np.random.default_rng(m)
    d, w = rng.standard_normal(m + 2), rng.standard_normal(3)
    want = [d[i : i + 3] @ w for i in range(m)]
    np.testing.assert_allclose(at @ ((g @ w) * (bt @ d)), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "m, c, k, size, pad, bn",
    [
        (2, 32, 32, 9, 1, 16),  # odd output: the last tiles overhang
        (2, 16, 48, 8, 0, 16),  # no padding: 6x6 output
        (2, 64, 64, 14, 1, 32),
        (2, 32, 32, 56, 1, 16),  # 3.2 MB of V and M: computed per block of tile rows
    ],
)
def test_winograd_matches_the_direct_convolution(run, m, c, k, size, pad, bn):
    """With the bias, residual add and relu a network fuses after it."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c, size, size)).astype(np.float32)
    w = rng.standard_normal((k, c, 3, 3)).astype(np.float32)
    bias = rng.standard_normal((k // bn, 1, 1, bn)).astype(np.float32)
    ref = testing.conv2d_nchw_python(x.astype(np.float64), w.astype(np.float64), 1, pad)
    res = rng.standard_normal(ref.shape).astype(np.float32)
    u = nn.winograd_weight(w, m, bn)
    X, U, B, R = (
        te.placeholder(a.shape, name=n)
        for a, n in (
            (testing.nchw_pack(x, bn), "X"),
            (u, "U"),
            (bias, "B"),
            (testing.nchw_pack(res, bn), "R"),
        )
    )
    conv = nn.conv2d_winograd_NCHWc(X, U, pad, m)
    Y = topi.nn.relu(topi.add(topi.add(conv, B), R))
    got = run(
        x86.schedule_conv2d_winograd_NCHWc(Y),
        [X, U, B, R],
        Y,
        testing.nchw_pack(x, bn),
        u,
        bias,
        testing.nchw_pack(res, bn),
    )
    want = np.maximum(
        ref + testing.nchwc_unpack(np.broadcast_to(bias, (1, k // bn, *ref.shape[2:], bn))) + res, 0
    )
    np.testing.assert_allclose(
        testing.nchwc_unpack(got), want, rtol=1e-4, atol=1e-4 * np.abs(want).max()
    )


@pytest.mark.parametrize(
    "tiles, limit, vectors, want",
    [
        (49, 6, 2, 6),  # AVX2, 14x14 output: the divisor 1 would load 3 vectors per 2 FMAs
        (196, 6, 2, 4),  # AVX2, 28x28: the divisor 4 does 8 FMAs per 6 loads
        (49, 14, 2, 7),  # AVX-512 (32-channel blocks), 14x14: the divisor 7 stays
        (784, 14, 2, 14),
        (4, 6, 2, 4),  # fewer tiles than the limit
    ],
)
def test_gemm_tiles_take_a_partial_tile_over_a_poor_divisor(tiles, limit, vectors, want):
    assert x86.winograd.gemm_tiles(tiles, limit, vectors) == want


def test_winograd_with_a_partial_gemm_tile_on_avx2(run):
    """14x14 output on AVX2 (49 tiles: register tiles of 6, the last of 1)."""
    from compiler.codegen.target import target_scope

    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 32, 14, 14)).astype(np.float32)
    w = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    u = nn.winograd_weight(w, 2, 16)
    X, U = te.placeholder((1, 2, 14, 14, 16), name="X"), te.placeholder(u.shape, name="U")
    with target_scope("llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f"):
        Y = nn.conv2d_winograd_NCHWc(X, U, 1, 2)
        got = run(x86.schedule_conv2d_winograd_NCHWc(Y), [X, U], Y, testing.nchw_pack(x, 16), u)
    want = testing.conv2d_nchw_python(x.astype(np.float64), w.astype(np.float64), 1, 1)
    np.testing.assert_allclose(testing.nchwc_unpack(got), want, rtol=1e-4, atol=1e-4 * 30)


def test_bad_arguments_are_named():
    with pytest.raises(OperatorError, match=r"output tiles of 4x4; supported are \[2\]"):
        nn.winograd_weight(np.zeros((4, 4, 3, 3), np.float32), 4, 4)
    with pytest.raises(OperatorError, match="a 3x3 filter"):
        nn.winograd_weight(np.zeros((4, 4, 5, 5), np.float32), 2, 4)
    x = te.placeholder((1, 2, 8, 8, 16))
    with pytest.raises(OperatorError, match="do not match"):
        nn.conv2d_winograd_NCHWc(x, te.placeholder((4, 4, 1, 16, 16)), 1, 2)


@pytest.mark.parametrize(
    "tile_rows, row_bytes, u_bytes, threads, rows",
    [
        (28, 229_376, 262_144, 2, 4),  # 64x56x56: 6.1 MB of V and M, a 0.25 MB filter
        (14, 229_376, 1 << 20, 2, None),  # 128x28x28: 7 blocks would read 7 MB of filter
        (4, 100_000, 1000, 2, None),  # all of V and M fits in the L2
        (28, 229_376, 262_144, 4, 2),  # two blocks per thread
    ],
)
def test_block_rows_keep_v_and_m_in_l2_when_the_filter_is_small(
    tile_rows, row_bytes, u_bytes, threads, rows
):
    from compiler.topi.x86.winograd import block_rows

    assert block_rows(tile_rows, row_bytes, u_bytes, threads, 2 << 20) == rows


def test_block_rows_on_a_small_l2():
    """64x56x56 on a 512 KB L2: blocks of one tile row (28 reads of the 0.25 MB filter cost
    less than 6.4 MB of V and M written to memory and read back)."""
    from compiler.topi.x86.winograd import block_rows

    assert block_rows(28, 229_376, 262_144, 2, 512 << 10) == 1
