"""Pooling (windowed, global) and softmax against numpy."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.topi import testing, x86


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize(
    "shape,kernel,stride,pad,include_pad",
    [
        ((1, 8, 14, 14), 2, 2, 0, True),
        ((2, 3, 11, 9), 3, 2, 1, True),
        ((1, 4, 10, 13), (3, 2), 1, (1, 0, 2, 1), False),
    ],
)
def test_pool2d(run, rng, pool_type, shape, kernel, stride, pad, include_pad):
    a = rng.standard_normal(shape).astype(np.float32)
    A = te.placeholder(shape, name="A")
    P = topi.nn.pool2d(A, kernel, stride, 1, pad, pool_type, count_include_pad=include_pad)
    got = run(x86.schedule_pool(P), [A], P, a)
    ref = testing.pool2d_python(a, kernel, stride, 1, pad, pool_type, include_pad)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_pool2d_ceil_mode(run, rng):
    a = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    P = topi.nn.pool2d(A, 3, 2, 1, 0, "max", ceil_mode=True)
    assert P.shape == (1, 2, 3, 3)
    got = run(x86.schedule_pool(P), [A], P, a)
    np.testing.assert_array_equal(got[:, :, :2, :2], testing.pool2d_python(a, 3, 2, 1, 0, "max"))
    np.testing.assert_array_equal(got[:, :, 2, 2], a[:, :, 4:, 4:].max(axis=(2, 3)))


@pytest.mark.parametrize("pool_type,ref", [("max", np.max), ("avg", np.mean)])
def test_global_pool(run, rng, pool_type, ref):
    a = rng.standard_normal((2, 5, 7, 9)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    P = topi.nn.global_pool(A, pool_type)
    got = run(x86.schedule_pool(P), [A], P, a)
    np.testing.assert_allclose(got, ref(a, axis=(2, 3), keepdims=True), rtol=1e-5)


def test_pool_rejects_unknown_type():
    with pytest.raises(ValueError, match="'min'"):
        topi.nn.pool2d(te.placeholder((1, 1, 4, 4)), 2, 2, 1, 0, "min")


@pytest.mark.parametrize(
    "shape,axis", [((4, 37), -1), ((3, 16, 5), 1), ((2, 3, 64), 2), ((10,), 0)]
)
def test_softmax(run, rng, shape, axis):
    a = (rng.standard_normal(shape) * 5).astype(np.float32)
    A = te.placeholder(shape, name="A")
    S = topi.nn.softmax(A, axis)
    got = run(x86.schedule_softmax(S), [A], S, a)
    np.testing.assert_allclose(got, testing.softmax_python(a, axis), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize(
    "kernel,stride,pad,ceil,include_pad",
    [(3, 2, 1, False, True), (3, 2, 0, True, False), (2, 2, (0, 0, 1, 1), False, False)],
)
def test_pool2d_nchwc(run, rng, pool_type, kernel, stride, pad, ceil, include_pad):
    a = rng.standard_normal((1, 32, 11, 12)).astype(np.float32)
    ap = testing.nchw_pack(a, 16)
    A = te.placeholder(ap.shape, name="A")
    args = (kernel, stride, 1, pad, pool_type, ceil)
    P = topi.nn.pool2d(A, *args, layout="NCHW16c", count_include_pad=include_pad)
    got = testing.nchwc_unpack(run(x86.schedule_pool(P), [A], P, ap))
    B = te.placeholder(a.shape, name="B")  # the NCHW operator is checked against numpy above
    Q = topi.nn.pool2d(B, *args, count_include_pad=include_pad)
    np.testing.assert_allclose(got, run(x86.schedule_pool(Q), [B], Q, a), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("pool_type,ref", [("max", np.max), ("avg", np.mean)])
def test_global_pool_nchwc(run, rng, pool_type, ref):
    a = rng.standard_normal((1, 32, 7, 7)).astype(np.float32)
    A = te.placeholder((1, 2, 7, 7, 16), name="A")
    P = topi.nn.global_pool(A, pool_type, layout="NCHW16c")
    got = testing.nchwc_unpack(run(x86.schedule_pool(P), [A], P, testing.nchw_pack(a, 16)))
    np.testing.assert_allclose(got, ref(a, axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


def test_pool_layout_mismatch_is_named():
    with pytest.raises(ValueError, match="NCHW16c tensor has 5 axes"):
        topi.nn.pool2d(te.placeholder((1, 2, 5, 5)), 2, 2, 1, 0, "max", layout="NCHW16c")
