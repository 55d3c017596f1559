"""Every schedule primitive, built and compared with numpy."""

import numpy as np
import pytest

import compiler
from compiler import te


def build_run(s, args, arrays):
    mod = compiler.build(s, args)
    mod(*arrays)
    return mod


def test_compute_at_with_non_divisible_split(rng):
    A = te.placeholder((30, 22), name="A")
    B = te.compute((30, 22), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((30, 22), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 5)
    s[B].compute_at(s[C], yo)
    text = str(compiler.lower(s, [A, C]))
    assert "allocate B: float32[40]" in text  # one 8x5 tile of B per iteration
    a = rng.random((30, 22), dtype=np.float32)
    c = np.zeros_like(a)
    build_run(s, [A, C], [a, c])
    np.testing.assert_allclose(c, a * 2 + 1)


def test_compute_at_stencil_region_and_inline(rng):
    A = te.placeholder((40,), name="A")
    P = te.compute(
        (42,), lambda i: te.if_then_else(te.all(i >= 1, i < 41), A[i - 1], 0.0), name="P"
    )
    B = te.compute((40,), lambda i: P[i] + P[i + 1] + P[i + 2], name="B")
    C = te.compute((40,), lambda i: B[i] * 0.5, name="C")
    s = te.create_schedule(C.op)
    s[P].compute_inline()
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[B].compute_at(s[C], xo)
    a = rng.random(40, dtype=np.float32)
    c = np.zeros_like(a)
    build_run(s, [A, C], [a, c])
    p = np.pad(a, 1)
    np.testing.assert_allclose(c, (p[:-2] + p[1:-1] + p[2:]) * 0.5, rtol=1e-6)
    s[B].compute_root()
    c[:] = 0
    build_run(s, [A, C], [a, c])
    np.testing.assert_allclose(c, (p[:-2] + p[1:-1] + p[2:]) * 0.5, rtol=1e-6)


def test_cache_read_and_cache_write_keep_scopes_in_ir(rng):
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis(n, "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[CC].compute_at(s[C], jo)
    s[AA].compute_at(s[C], jo)
    text = str(compiler.lower(s, [A, B, C]))
    assert "scope='local'" in text and "scope='shared'" in text
    assert "allocate A.shared: float32[256]" in text  # 8 rows of A, all of k
    a, b = rng.random((2, n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    build_run(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert CC.name == "C.local"


def test_vectorize_unroll_parallel(rng):
    A = te.placeholder((64, 48), name="A")
    C = te.compute((64, 48), lambda i, j: te.exp(A[i, j]) + A[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=16)
    io, ii = s[C].split(i, factor=2)
    s[C].parallel(io)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    f = compiler.lower(s, [A, C])
    assert "ramp(" in str(f) and "parallel" in str(f) and "i.inner" not in str(f)
    a = rng.random((64, 48), dtype=np.float32)
    c = np.zeros_like(a)
    mod = build_run(s, [A, C], [a, c])
    assert "vta_parallel_for" in mod.get_source("ll-raw")
    assert "<16 x float>" in mod.get_source("ll-raw")
    np.testing.assert_allclose(c, np.exp(a) + a * 3, rtol=1e-5)


def test_vectorize_with_predicate_falls_back_to_scalar(rng):
    A = te.placeholder((50,), name="A")
    C = te.compute((50,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    a = rng.random(50, dtype=np.float32)
    c = np.zeros_like(a)
    build_run(s, [A, C], [a, c])
    np.testing.assert_allclose(c, a + 1)


def test_fused_parallel_reduction_with_where(rng):
    A = te.placeholder((6, 10, 12), name="A")
    k = te.reduce_axis(12, "k")
    C = te.compute((6, 10), lambda i, j: te.sum(A[i, j, k], axis=k, where=k % 3 != 0), name="C")
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    s[C].parallel(f)
    a = rng.random((6, 10, 12), dtype=np.float32)
    c = np.zeros((6, 10), np.float32)
    build_run(s, [A, C], [a, c])
    mask = np.arange(12) % 3 != 0
    np.testing.assert_allclose(c, a[..., mask].sum(-1), rtol=1e-5)


def test_reducers_max_min_and_user_comm_reducer(rng):
    A = te.placeholder((8, 9), name="A")
    k = te.reduce_axis(9, "k")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: 1, name="prod")
    Mx = te.compute((8,), lambda i: te.max(A[i, k], axis=k), name="Mx")
    Mn = te.compute((8,), lambda i: te.min(A[i, k], axis=k), name="Mn")
    Pr = te.compute((8,), lambda i: prod(A[i, k], axis=k), name="Pr")
    a = rng.random((8, 9), dtype=np.float32) + 0.5
    for T, ref in ((Mx, a.max(1)), (Mn, a.min(1)), (Pr, a.prod(1))):
        out = np.zeros(8, np.float32)
        build_run(te.create_schedule(T.op), [A, T], [a, out])
        np.testing.assert_allclose(out, ref, rtol=1e-5)


@pytest.mark.parametrize(
    "name, ref",
    [
        ("exp", np.exp),
        ("log", np.log),
        ("sqrt", np.sqrt),
        ("tanh", np.tanh),
        ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
        ("erf", None),
    ],
)
def test_math_intrinsics_scalar_and_vector(rng, name, ref):
    import math

    if ref is None:
        ref = np.vectorize(math.erf)
    A = te.placeholder((32,), name="A")
    C = te.compute((32,), lambda i: getattr(te, name)(A[i]), name="C")
    s = te.create_schedule(C.op)
    a = rng.random(32, dtype=np.float32) + 0.1
    for vector in (False, True):
        if vector:
            s[C].vectorize(C.op.axis[0])
        c = np.zeros_like(a)
        build_run(s, [A, C], [a, c])
        np.testing.assert_allclose(c, ref(a).astype(np.float32), rtol=2e-6, atol=1e-7)


def _scalar_and_vector(fn, x: np.ndarray):
    """`fn` over `x` built scalar, then vectorized by 16: both outputs and the last module."""
    A = te.placeholder(x.shape, str(x.dtype), name="A")
    C = te.compute(x.shape, lambda i: fn(A[i]), name="C")
    s = te.create_schedule(C.op)
    outs = []
    for vector in (False, True):
        if vector:
            s[C].split(C.op.axis[0], factor=16)
            s[C].vectorize(s[C].leaf_iter_vars[-1])
        outs.append(np.zeros_like(x))
        mod = build_run(s, [A, C], [x, outs[-1]])
    return outs, mod


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fast_erf_is_arithmetic_within_its_bound(dtype):
    """fast_erf: scalar and vectorized alike within 5e-7 of erf in float32, tiny, large,
    infinite and NaN arguments of both signs, with no call to libm's erff in the vectorized
    code; float64 is libm's erf."""
    import math

    x = np.concatenate([np.linspace(-6, 6, 1001), np.logspace(-9, 1.5, 60),
                        -np.logspace(-9, 1.5, 60), [0.0, np.inf, -np.inf, np.nan]])  # fmt: skip
    x = np.resize(x, 1136).astype(dtype)
    want = np.array([math.erf(v) for v in x.tolist()])
    outs, mod = _scalar_and_vector(te.fast_erf, x)
    bound = (0.0, 5e-7) if dtype == "float32" else (1e-15, 0.0)
    for c in outs:
        np.testing.assert_allclose(c, want, rtol=bound[0], atol=bound[1], equal_nan=True)
    if dtype == "float32":
        assert "erff" not in mod.get_source("ll-raw")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fast_exp_is_arithmetic_within_its_bound(dtype):
    """fast_exp: scalar and vectorized alike within 2 ulp of exp in float32 over its range
    (-86.6, 88.72], 0 below it, inf above, NaN to NaN, with no call to libm's expf in the vectorized
    code; float64 is libm's exp."""
    x = np.concatenate([np.linspace(-86.6, 88.7, 2001), np.linspace(-1, 1, 101),
                        [-86.7, -100.0, 88.8, 0.0, np.inf, -np.inf, np.nan]])  # fmt: skip
    x = np.resize(x, 2112).astype(dtype)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(dtype)  # float32's overflows to inf
    if dtype == "float32":
        want[x < -86.6] = 0.0
    outs, mod = _scalar_and_vector(te.fast_exp, x)
    rtol = 2 * 2.0**-24 if dtype == "float32" else 1e-15
    for c in outs:
        np.testing.assert_allclose(c, want, rtol=rtol, atol=0.0, equal_nan=True)
    if dtype == "float32":
        assert "expf" not in mod.get_source("ll-raw")


@pytest.mark.parametrize(
    "src, dst",
    [
        ("int8", "int32"),
        ("uint8", "float32"),
        ("int16", "int64"),
        ("float16", "float32"),
        ("float64", "float16"),
        ("int32", "bool"),
        ("bool", "float32"),
    ],
)
def test_dtypes_and_casts(rng, src, dst):
    A = te.placeholder((40,), src, name="A")
    C = te.compute(
        (40,), lambda i: (A[i] + A[i]).astype(dst) if src != "bool" else A[i].astype(dst), name="C"
    )
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    npsrc = np.dtype(src)
    a = (rng.integers(0, 2, 40) if src == "bool" else rng.integers(-50, 50, 40)).astype(npsrc)
    c = np.zeros(40, np.dtype(dst))
    build_run(s, [A, C], [a, c])
    ref = (a if src == "bool" else a + a).astype(np.dtype(dst))
    np.testing.assert_array_equal(c, ref)


def test_if_then_else_evaluates_only_the_taken_branch(rng):
    # the untaken branch would read far outside A; if it were evaluated this could crash
    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: te.if_then_else(i < 8, A[i], A[i + 100000000]), name="C")
    s = te.create_schedule(C.op)
    C2 = te.compute((16,), lambda i: te.if_then_else(i < 16, A[i], A[i * 1000000]), name="C2")
    a = rng.random(16, dtype=np.float32)
    c = np.zeros_like(a)
    mod = compiler.build(te.create_schedule(C2.op), [A, C2])
    mod(a, c)
    np.testing.assert_array_equal(c, a)
    assert "if_then_else" in str(compiler.lower(s, [A, C]))


def test_pragma_storage_align_double_buffer_in_ir(rng):
    A = te.placeholder((16, 16), name="A")
    B = te.compute((16, 16), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((16, 16), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    s[B].storage_align(B.op.axis[0], 32, 1)
    s[B].double_buffer()
    s[C].pragma(xo, "auto_unroll_max_step", 16)
    passes = compiler.lower_passes(s, [A, C])
    text = str(passes["schedule_ops"])
    assert "pragma_auto_unroll_max_step = 16" in text
    assert "double_buffer_scope" in text
    assert "float32[2, 4, 16], strides=[132, 33, 1]" in text  # two halves, rows padded to 33
    a = rng.random((16, 16), dtype=np.float32)
    c = np.zeros_like(a)
    build_run(s, [A, C], [a, c])
    np.testing.assert_allclose(c, (a + 1) * 2)
