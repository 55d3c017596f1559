"""End to end: te -> schedule -> lower -> LLVM -> call on numpy arrays."""

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.arith import Analyzer
from compiler.runtime import ArgumentError
from compiler.tir import expr as E


def matmul(n, m, k, dtype="float32"):
    A = te.placeholder((n, k), dtype, name="A")
    B = te.placeholder((k, m), dtype, name="B")
    r = te.reduce_axis(k, "k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def run(s, args, arrays):
    mod = compiler.build(s, args)
    mod(*arrays)
    return mod


def test_matmul_default_schedule(rng):
    A, B, C = matmul(32, 48, 40)
    s = te.create_schedule(C.op)
    a = rng.random((32, 40), dtype=np.float32)
    b = rng.random((40, 48), dtype=np.float32)
    c = np.zeros((32, 48), np.float32)
    run(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_matmul_split_reorder_fuse(rng):
    A, B, C = matmul(32, 48, 40)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, ii = s[C].split(i, factor=8)
    jo, ji = s[C].split(j, nparts=3)
    ko, ki = s[C].split(k, factor=8)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    f = s[C].fuse(io, jo)
    assert f.name == "i.outer.j.outer.fused"
    a = rng.random((32, 40), dtype=np.float32)
    b = rng.random((40, 48), dtype=np.float32)
    c = np.zeros((32, 48), np.float32)
    run(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_lowered_ir_prints_loops_and_flat_indices():
    A, B, C = matmul(16, 16, 16)
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    text = str(compiler.lower(s, [A, B, C]))
    assert "for i.outer in range(4):" in text
    assert "C[i.outer * 64 + i.inner * 16 + j] = 0.0" in text
    passes = compiler.lower_passes(s, [A, B, C])
    assert list(passes)[:3] == ["schedule_ops", "inject_virtual_thread", "storage_flatten"]
    assert "C[i.outer * 4 + i.inner, j]" in str(passes["schedule_ops"])


@pytest.mark.parametrize(
    "fn, ref",
    [
        (lambda a, b: a + b, np.add),
        (lambda a, b: a - b * 2.0, lambda a, b: a - b * 2),
        (lambda a, b: te.max(a, b) / (b + 1.0), lambda a, b: np.maximum(a, b) / (b + 1)),
        (lambda a, b: te.select(a > b, a, -b), lambda a, b: np.where(a > b, a, -b)),
    ],
)
def test_elementwise(rng, fn, ref):
    A = te.placeholder((7, 13), name="A")
    B = te.placeholder((7, 13), name="B")
    C = te.compute((7, 13), lambda i, j: fn(A[i, j], B[i, j]), name="C")
    s = te.create_schedule(C.op)
    a, b = rng.standard_normal((2, 7, 13), dtype=np.float32)
    c = np.zeros((7, 13), np.float32)
    run(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, ref(a, b), rtol=1e-6)


def test_integer_floordiv_floormod_negative(rng):
    A = te.placeholder((64,), "int32", name="A")
    C = te.compute((64,), lambda i: A[i] // 3 + A[i] % 5 * 7 - (i - 32) // 4, name="C")
    s = te.create_schedule(C.op)
    a = rng.integers(-100, 100, 64, dtype=np.int32)
    c = np.zeros(64, np.int32)
    run(s, [A, C], [a, c])
    np.testing.assert_array_equal(c, a // 3 + a % 5 * 7 - (np.arange(64) - 32) // 4)


def test_index_arithmetic_is_nsw_and_value_arithmetic_wraps(rng):
    # indices of loop variables are marked no-signed-wrap (LLVM widens them into addresses);
    # int32 values still wrap as numpy's do, and an index read from memory is left unmarked
    A = te.placeholder((8, 64), "int32", name="A")
    idx = te.placeholder((8,), "int32", name="idx")
    C = te.compute((8, 64), lambda i, j: A[i, j] * A[i, j] + A[idx[i], j], name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    a = rng.integers(-(2**31), 2**31 - 1, (8, 64), dtype=np.int32)
    ix = rng.integers(0, 8, 8, dtype=np.int32)
    c = np.zeros((8, 64), np.int32)
    mod = run(s, [A, idx, C], [a, ix, c])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(c, a * a + a[ix])
    raw = mod.get_source("ll-raw")
    assert "mul nsw i32" in raw and "add nsw i32" in raw  # i * 64 + j of A[i, j] and C[i, j]
    assert " mul i32 " in raw and " add i32 " in raw  # a * a + a[ix], which overflow, wrap


def test_argument_checks_name_the_parameter():
    A = te.placeholder((4, 4), name="A")
    C = te.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="C")
    mod = compiler.build(te.create_schedule(C.op), [A, C])
    good = np.zeros((4, 4), np.float32)
    with pytest.raises(ArgumentError, match="'A' has shape"):
        mod(np.zeros((4, 5), np.float32), good)
    with pytest.raises(ArgumentError, match="'C' has dtype float64"):
        mod(good, np.zeros((4, 4)))
    with pytest.raises(ArgumentError, match="C-contiguous"):
        mod(np.zeros((4, 4), np.float32).T, good)
    with pytest.raises(ArgumentError, match="takes 2 arrays"):
        mod(good)


def test_simplifier_takes_the_branch_a_constant_condition_chooses(monkeypatch):
    """Only that branch is simplified (unrolled position-selected sums, as the Winograd
    transforms are, would otherwise simplify every position's sum in every copy)."""
    from compiler.arith import simplify
    from compiler.tir.functor import substitute

    i, x, dead = E.Var("i"), E.Var("x", "float32"), E.Var("dead", "float32")
    ana = Analyzer({i: (0, 3)})
    chain = te.if_then_else(i == 0, x + te.const(0.0, "float32"), x * te.const(2.0, "float32"))
    assert str(ana.simplify(substitute(chain, {i: E.const(0)}))) == "x"
    assert str(ana.simplify(substitute(chain, {i: E.const(2)}))) == "x * 2.0"
    assert str(ana.simplify(chain)).startswith("tir.if_then_else")  # not settled: both kept
    seen = []
    generic = simplify._Simplifier.generic
    monkeypatch.setattr(
        simplify._Simplifier, "generic", lambda self, n: seen.append(n) or generic(self, n)
    )
    choice = E.Select(i < 8, x * te.const(1.0, "float32"), dead + dead)
    assert str(ana.simplify(choice)) == "x"
    assert not [n for n in seen if isinstance(n, E.Add)]  # the other branch was never visited


def test_simplifier_collapses_split_and_fuse_indices():
    i, j, f = E.Var("i"), E.Var("j"), E.Var("f")
    ana = Analyzer({i: (0, 63), j: (0, 15), f: (0, 1023)})
    assert str(ana.simplify((i * 16 + j) // 16)) == "i"
    assert str(ana.simplify((i * 16 + j) % 16)) == "j"
    assert str(ana.simplify(f // 32 * 32 + f % 32)) == "f"
    assert str(ana.simplify((i * 16 + j + 5) // 4 * 4 + (i * 16 + j + 5) % 4)) == "i * 16 + j + 5"
    assert E.is_const(ana.simplify(i * 16 + j < 1024), 1)
    assert str(ana.simplify(i * 16 + j < 1000)) == "i * 16 + j < 1000"
    assert str(ana.simplify((f + 3) // 8)) == "(f + 3) // 8"


def test_affine_in_splits_base_and_stride_or_declines():
    i, j, v = E.Var("i"), E.Var("j"), E.Var("v")
    ana = Analyzer({i: (0, 63), j: (0, 15), v: (0, 7)})
    base, stride = ana.affine_in(i * 128 + (j * 8 + v) * 3 + 5, v)
    assert (str(base), stride) == ("i * 128 + j * 24 + 5", 3)
    base, stride = ana.affine_in((j * 8 + v) // 8 * 4 + v, v)  # the floordiv folds to j
    assert (str(base), stride) == ("j * 4", 1)
    assert ana.affine_in(i * 4 + j, v) is None  # v absent
    assert ana.affine_in((v + i) // 3 + v, v) is None  # v also inside a floordiv
    assert ana.affine_in(v * v, v) is None
