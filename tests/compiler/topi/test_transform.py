"""reshape, transpose, concatenate, layout packing and clip against numpy."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.driver import lower
from compiler.errors import LoweringError
from compiler.topi import testing, x86


def test_reshape(run, rng):
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    B = topi.nn.reshape(A, (6, 20))
    np.testing.assert_array_equal(run(x86.schedule_injective(B), [A], B, a), a.reshape(6, 20))
    with pytest.raises(ValueError, match="cannot reshape"):
        topi.nn.reshape(A, (7, 20))


@pytest.mark.parametrize("axes", [None, (0, 2, 3, 1), (1, 0, 3, 2)])
def test_transpose(run, rng, axes):
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    B = topi.nn.transpose(A, axes)
    got = run(x86.schedule_injective(B), [A], B, a)
    np.testing.assert_array_equal(got, np.transpose(a, axes))


def test_concatenate(run, rng):
    arrs = [rng.standard_normal((1, c, 3, 4)).astype(np.float32) for c in (2, 5, 1)]
    ts = [te.placeholder(a.shape, name=f"A{k}") for k, a in enumerate(arrs)]
    C = topi.nn.concatenate(ts, axis=1)
    got = run(x86.schedule_injective(C), ts, C, *arrs)
    np.testing.assert_array_equal(got, np.concatenate(arrs, axis=1))


def test_concatenate_of_many_parts_selects_in_a_balanced_tree(run, rng):
    # 400 parts (one empty): a chain of 400 selects exhausted the passes' recursion
    sizes = [1 + k % 3 for k in range(400)]
    sizes[7] = 0
    arrays = [rng.standard_normal((2, n)).astype(np.float32) for n in sizes]
    tensors = [te.placeholder(a.shape, name=f"P{k}") for k, a in enumerate(arrays)]
    C = topi.nn.concatenate(tensors, axis=1)
    got = run(x86.schedule_injective(C), tensors, C, *arrays)
    np.testing.assert_array_equal(got, np.concatenate(arrays, axis=1))


def test_an_expression_too_deep_to_lower_is_a_lowering_error():
    A = te.placeholder((4,), name="A")

    def chain(i):
        e = A[i]
        for k in range(3000):
            e = e + float(k)
        return e

    B = te.compute((4,), chain, name="B")
    with pytest.raises(LoweringError, match="lower deep: an expression nests deeper"):
        lower(te.create_schedule(B.op), [A, B], "deep")


def test_layout_packing(run, rng):
    a = rng.standard_normal((1, 32, 5, 6)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    P = topi.nn.pack_nchwc(A, 16)
    np.testing.assert_array_equal(
        run(x86.schedule_injective(P), [A], P, a), testing.nchw_pack(a, 16)
    )
    Q = te.placeholder((1, 2, 5, 6, 16), name="Q")
    R = topi.nn.repack_nchwc(Q, 8)
    got = run(x86.schedule_injective(R), [Q], R, testing.nchw_pack(a, 16))
    np.testing.assert_array_equal(got, testing.nchw_pack(a, 8))
    U = topi.nn.unpack_nchwc(Q)
    np.testing.assert_array_equal(
        run(x86.schedule_injective(U), [Q], U, testing.nchw_pack(a, 16)), a
    )


def test_clip(run, rng):
    a = rng.standard_normal((3, 17)).astype(np.float32) * 5
    A = te.placeholder(a.shape, name="A")
    C = topi.nn.clip(A, 0.0, 6.0)
    np.testing.assert_array_equal(run(x86.schedule_injective(C), [A], C, a), np.clip(a, 0, 6))
