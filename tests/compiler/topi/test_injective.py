"""Elementwise, broadcast, activation, bias_add, batch_norm and pad against numpy."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.topi import testing, x86


def rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


BINARY = [
    (topi.add, np.add),
    (topi.subtract, np.subtract),
    (topi.multiply, np.multiply),
    (topi.divide, np.divide),
    (topi.maximum, np.maximum),
    (topi.minimum, np.minimum),
]


@pytest.mark.parametrize("op,ref", BINARY)
@pytest.mark.parametrize(
    "sa,sb", [((4, 33), (4, 33)), ((2, 3, 32), (3, 1)), ((5, 1, 7), (1, 6, 1)), ((48,), (3, 48))]
)
def test_broadcast_binary(run, rng, op, ref, sa, sb):
    A, B = te.placeholder(sa, name="A"), te.placeholder(sb, name="B")
    C = op(A, B)
    a, b = rand(rng, sa), rand(rng, sb)
    if op is topi.divide:
        b = np.where(np.abs(b) < 0.1, 1.0, b).astype(np.float32)
    got = run(x86.schedule_injective(C), [A, B], C, a, b)
    np.testing.assert_allclose(got, ref(a, b), rtol=1e-6)


def test_scalar_operand_and_power(run, rng):
    A = te.placeholder((3, 17), name="A")
    C = topi.power(topi.add(A, 2.0), 2.0)
    D = topi.subtract(1.0, C)
    a = rand(rng, (3, 17))
    got = run(x86.schedule_injective(D), [A], D, a)
    np.testing.assert_allclose(got, 1.0 - (a + 2.0) ** 2, rtol=1e-5)


def test_incompatible_shapes_are_named():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5,\)"):
        topi.add(te.placeholder((3, 4)), te.placeholder((5,)))


def test_broadcast_to(run, rng):
    A = te.placeholder((3, 1), name="A")
    C = topi.broadcast_to(A, (2, 3, 20))
    a = rand(rng, (3, 1))
    np.testing.assert_array_equal(
        run(x86.schedule_injective(C), [A], C, a), np.broadcast_to(a, (2, 3, 20))
    )


@pytest.mark.parametrize(
    "op,ref",
    [
        (topi.exp, np.exp),
        (topi.tanh, np.tanh),
        (topi.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
        (topi.negative, np.negative),
        (topi.nn.relu, lambda x: np.maximum(x, 0)),
        (lambda x: topi.nn.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    ],
)
def test_unary(run, rng, op, ref):
    A = te.placeholder((7, 48), name="A")
    C = op(A)
    a = rand(rng, (7, 48))
    np.testing.assert_allclose(run(x86.schedule_injective(C), [A], C, a), ref(a), rtol=1e-5)


def test_sqrt_log(run, rng):
    A = te.placeholder((5, 19), name="A")
    C = topi.log(topi.sqrt(A))
    a = rng.uniform(0.5, 4, (5, 19)).astype(np.float32)
    got = run(x86.schedule_injective(C), [A], C, a)
    np.testing.assert_allclose(got, np.log(np.sqrt(a)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,axis", [((2, 16, 5, 7), 1), ((6, 33), -1), ((3, 4, 32), 2)])
def test_bias_add_relu_fused(run, rng, shape, axis):
    A = te.placeholder(shape, name="A")
    bias = te.placeholder((shape[axis],), name="bias")
    C = topi.nn.relu(topi.nn.bias_add(A, bias, axis))
    s = x86.schedule_injective(C)
    assert s[C.op.input_tensors[0]].attach_type == "inline"
    a, b = rand(rng, shape), rand(rng, (shape[axis],))
    bshape = [1] * len(shape)
    bshape[axis] = -1
    got = run(s, [A, bias], C, a, b)
    np.testing.assert_allclose(got, np.maximum(a + b.reshape(bshape), 0), rtol=1e-6)


def test_bias_add_rejects_wrong_length():
    with pytest.raises(ValueError, match="bias shape"):
        topi.nn.bias_add(te.placeholder((2, 8, 3, 3)), te.placeholder((7,)))


@pytest.mark.parametrize("shape", [(1, 16, 7, 9), (2, 5, 4, 32)])
def test_batch_norm(run, rng, shape):
    c = shape[1]
    X = te.placeholder(shape, name="X")
    params = [te.placeholder((c,), name=n) for n in ("gamma", "beta", "mean", "var")]
    Y = topi.nn.batch_norm(X, *params, epsilon=1e-3)
    x = rand(rng, shape)
    g, b, m = (rand(rng, (c,)) for _ in range(3))
    v = rng.uniform(0.5, 2, c).astype(np.float32)
    got = run(x86.schedule_injective(Y), [X, *params], Y, x, g, b, m, v)
    ref = testing.batch_norm_python(x, g, b, m, v, epsilon=1e-3)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shape,before,after,value",
    [((3, 5, 6), (0, 1, 2), (1, 0, 3), 0.0), ((2, 32), (1, 16), None, -1.5)],
)
def test_pad(run, rng, shape, before, after, value):
    A = te.placeholder(shape, name="A")
    C = topi.nn.pad(A, before, after, value)
    a = rand(rng, shape)
    widths = list(zip(before, after or before, strict=True))
    ref = np.pad(a, widths, constant_values=value)
    np.testing.assert_array_equal(run(x86.schedule_injective(C), [A], C, a), ref)


def test_pad_needs_every_axis():
    with pytest.raises(ValueError, match="3-d input needs 3"):
        topi.nn.pad(te.placeholder((2, 3, 4)), (1, 1))
