"""matmul / dense: generic computes with schedule_dense, packed ones with schedule_dense_pack."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.topi import x86

SHAPES = [(16, 64, 32), (13, 70, 37), (1, 10, 100), (65, 130, 9)]  # (M, N, K)


def operands(rng, m, n, k, transpose_b):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    ref = a @ (b.T if transpose_b else b)
    return a, b, bias, ref


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_matmul_pack(run, rng, m, n, k, transpose_b, with_bias):
    a, b, bias, ref = operands(rng, m, n, k, transpose_b)
    A = te.placeholder(a.shape, name="A")
    B = te.placeholder(b.shape, name="B")
    Bias = te.placeholder((n,), name="bias")
    C = x86.matmul_pack(A, B, Bias if with_bias else None, transpose_b=transpose_b, bn=32)
    s = x86.schedule_dense_pack(C, tile_m=4)
    args = [A, B, Bias] if with_bias else [A, B]
    arrays = [a, b, bias] if with_bias else [a, b]
    got = run(s, args, C, *arrays)
    np.testing.assert_allclose(got, ref + bias if with_bias else ref, rtol=1e-4, atol=1e-4)


def test_dense_pack_relu_keeps_accumulator_local(run, rng):
    a, w, bias, ref = operands(rng, 8, 64, 48, True)
    X, W, Bias = (te.placeholder(x.shape, name=nm) for x, nm in ((a, "X"), (w, "W"), (bias, "b")))
    Y = topi.nn.relu(x86.dense_pack(X, W, Bias))
    s = x86.schedule_dense_pack(Y)
    gemm = next(st for st in s.stages if st.op.tag == topi.tag.DENSE_PACK)
    assert gemm.scope == "local" and gemm.attach_type == "scope"
    got = run(s, [X, W, Bias], Y, a, w, bias)
    np.testing.assert_allclose(got, np.maximum(ref + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_dense_and_matmul_generic(run, rng, m, n, k):
    a, w, bias, ref = operands(rng, m, n, k, True)
    X, W, Bias = (te.placeholder(x.shape, name=nm) for x, nm in ((a, "X"), (w, "W"), (bias, "b")))
    Y = topi.nn.dense(X, W, Bias)
    got = run(x86.schedule_dense(Y), [X, W, Bias], Y, a, w, bias)
    np.testing.assert_allclose(got, ref + bias, rtol=1e-4, atol=1e-4)
    A, B = te.placeholder((k, m), name="A"), te.placeholder((k, n), name="B")
    C = topi.nn.matmul(A, B, transpose_a=True)
    got = run(x86.schedule_dense(C), [A, B], C, np.ascontiguousarray(a.T), w.T.copy())
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_reduction_mismatch_is_named():
    with pytest.raises(ValueError, match="reduction extents differ: 3 .* 4"):
        topi.nn.matmul(te.placeholder((2, 3)), te.placeholder((4, 5)))


@pytest.mark.parametrize("bn", [None, 256, 16])
def test_dense_with_weight_packed_ahead_of_time(run, bn):
    """A network's dense layer: the constant weight packed once in numpy (panels of the
    register tile's width, or of a batch-1 layer's wider ones), bias and relu fused."""
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((1, 300), (1000, 300), (1000,)))
    wp = x86.pack_weight(w, bn)
    X, W, B = (te.placeholder(a.shape, name=n) for a, n in ((x, "X"), (wp, "W"), (b, "B")))
    Y = topi.nn.relu(x86.matmul_packed(X, W, 1000, bias=B))
    got = run(x86.schedule_dense_pack(Y), [X, W, B], Y, x, wp, b)
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)


AVX2 = "llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f"
AVX512 = "llvm -mcpu=skylake-avx512"


@pytest.mark.parametrize(
    "target, rows, n, threads, width",
    [
        (AVX512, 1, 512, 2, 256),  # batch 1: 16 accumulators + a broadcast of 32 registers
        (AVX512, 1, 4096, 2, 256),
        (AVX512, 1, 18, 2, 16),  # narrower, so both threads have a panel
        (AVX512, 2, 512, 2, 128),
        (AVX512, 6, 512, 2, 64),  # the rows fill the register tile: its width
        (AVX2, 1, 512, 2, 64),  # 16 registers: 8 accumulators
        (AVX2, 6, 512, 2, 16),
    ],
)
def test_panel_width_adapts_to_rows_registers_and_threads(target, rows, n, threads, width):
    from compiler.codegen.target import target_scope

    with target_scope(target):
        assert x86.panel_width(rows, n, threads) == width
