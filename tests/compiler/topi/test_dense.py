"""matmul / dense: generic computes with schedule_dense, packed ones with schedule_dense_pack."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.topi import x86
from testkit.isa import host_runs

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
    "target, rows, n, k, threads, width",
    [
        # batch 1: 16 accumulators (+ a broadcast of 32 registers) as 4 K streams x 4 vectors
        (AVX512, 1, 512, 3136, 2, 64),
        (AVX512, 1, 4096, 1024, 2, 64),
        (AVX512, 1, 18, 512, 2, 16),  # narrower, so both threads have a panel
        (AVX512, 1, 512, 3135, 2, 256),  # an odd K is one stream: 16 vectors
        (AVX512, 2, 512, 3136, 2, 32),  # 8 accumulators per row: 4 streams x 2 vectors
        (AVX512, 6, 512, 3136, 2, 64),  # the rows fill the register tile: its width
        (AVX2, 1, 512, 3136, 2, 16),  # 16 registers: 8 accumulators, 4 streams x 2 vectors
        (AVX2, 1, 512, 1022, 2, 32),  # K splits in 2: 2 streams x 4 vectors
        (AVX2, 1, 512, 3135, 2, 64),
        (AVX2, 6, 512, 3136, 2, 16),
        (AVX2, 128, 768, 768, 2, 24),  # 24 divides the columns: the 4 x 3-vector tile
        (AVX2, 128, 3072, 3072, 2, 24),
        (AVX2, 128, 256, 768, 2, 16),  # it does not: 6 x 2 vectors
        (AVX512, 128, 768, 768, 2, 64),  # 4 x 6 vectors load as much per FMA as 6 x 4
    ],
)
def test_panel_width_adapts_to_rows_registers_reduction_and_threads(
    target, rows, n, k, threads, width
):
    from compiler.codegen.target import target_scope

    with target_scope(target):
        assert x86.panel_width(rows, n, k, threads) == width


@pytest.mark.parametrize(
    "target, rows, k, bn, streams",
    [
        (AVX512, 1, 3136, 64, 4),  # the panel_width choice: 4 x 4 vectors
        (AVX512, 1, 3136, 256, 1),  # 16 vectors already fill the row's accumulators
        (AVX512, 1, 3136, 16, 4),  # at most MAX_STREAMS
        (AVX512, 6, 3136, 64, 1),  # a full register tile reuses its weights from cache
        (AVX2, 1, 3136, 16, 4),
        (AVX2, 1, 3136, 32, 2),
        (AVX2, 1, 1022, 16, 2),  # as many as split K evenly
        (AVX2, 1, 3135, 16, 1),
    ],
)
def test_reduction_streams_fill_the_rows_accumulators(target, rows, k, bn, streams):
    from compiler.codegen.target import target_scope

    with target_scope(target):
        assert x86.reduction_streams(rows, k, bn) == streams


@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("streams", [1, 2, 3, 4])
def test_matmul_packed_in_streams(run, rng, m, streams):
    """K split in `streams` parts, each summed apart, then added; the parts' stage stays in
    registers at the panel; a tail panel (N = 40 in 32-wide panels) and the bias fused."""
    a, w, bias, ref = operands(rng, m, 40, 60, True)
    wp = x86.pack_weight(w, 32)
    X, W, B = (te.placeholder(x.shape, name=nm) for x, nm in ((a, "X"), (wp, "W"), (bias, "B")))
    Y = x86.matmul_packed(X, W, 40, bias=B, streams=streams)
    s = x86.schedule_dense_pack(Y)
    gemm = next(st for st in s.stages if st.op.tag == topi.tag.DENSE_PACK)
    assert gemm.op.output(0).shape == ((m, streams, 64) if streams > 1 else (m, 64))
    assert gemm.scope == "local" and gemm.attach_type == "scope"
    got = run(s, [X, W, B], Y, a, wp, bias)
    np.testing.assert_allclose(got, ref + bias, rtol=1e-4, atol=1e-4)


def test_streams_must_split_k():
    X, W = te.placeholder((1, 60), name="X"), te.placeholder((2, 60, 32), name="W")
    with pytest.raises(ValueError, match="7 streams do not split K = 60 evenly"):
        x86.matmul_packed(X, W, 40, streams=7)


@pytest.mark.parametrize("target", [AVX2, AVX512])
@pytest.mark.parametrize("k", [64, 70, 37])
def test_register_tile_unrolls_reduction_steps_on_16_register_targets(rng, target, k):
    """On AVX2 a packed GEMM's register tile takes 4 steps of K per loop iteration (the
    largest divisor of K under 4: 2 for 70, 1 for 37), unrolled; on AVX-512 one; the product
    is the matmul's either way."""
    from compiler.codegen.target import target_scope
    from compiler.driver import build, lower
    from compiler.topi.x86.utils import reduction_unroll

    a, b, _, ref = operands(rng, 12, 32, k, False)
    with target_scope(target):
        A, B = te.placeholder(a.shape, name="A"), te.placeholder(b.shape, name="B")
        C = x86.matmul_pack(A, B)
        s = x86.schedule_dense_pack(C)
        ir = str(lower(s, [A, B, C], "mm"))
        mod = build(s, [A, B, C], target=target)
        steps = reduction_unroll(k)
    assert steps == ({64: 4, 70: 2, 37: 1}[k] if target == AVX2 else 1)
    assert (f"for k.outer in range({k // steps})" in ir) == (steps > 1)
    assert (f"for k in range({k})" in ir) == (steps == 1)
    if host_runs("avx512" if target == AVX512 else "avx2"):
        c = np.zeros(C.shape, np.float32)
        mod(a, b, c)
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, k", [(128, 768), (30, 70)])
def test_wide_register_tile(rng, m, k):
    """On AVX2 a layer whose columns 24 divides takes 24-wide panels and 4-row register tiles
    (3 vectors a row); a partial last row tile (30 rows) and a K the unrolled steps do not
    divide (70) compute the same product, bias and relu fused."""
    from compiler.codegen.target import target_scope
    from compiler.driver import build, lower

    a, w, bias, ref = operands(rng, m, 48, k, True)
    with target_scope(AVX2):
        bn = x86.panel_width(m, 48, k, 2)
        assert (bn, x86.dense.tile_rows(bn)) == (24, 4)
        wp = x86.pack_weight(w, bn)
        X, W, B = (te.placeholder(x.shape, name=nm) for x, nm in ((a, "X"), (wp, "W"), (bias, "B")))
        Y = topi.nn.relu(x86.matmul_packed(X, W, 48, bias=B))
        s = x86.schedule_dense_pack(Y)
        assert ".inner in range(4)" in str(lower(s, [X, W, B, Y], "mm"))
        mod = build(s, [X, W, B, Y], target=AVX2)
    if host_runs("avx2"):
        got = np.zeros(Y.shape, np.float32)
        mod(a, wp, bias, got)
        np.testing.assert_allclose(got, np.maximum(ref + bias, 0), rtol=1e-4, atol=1e-4)
