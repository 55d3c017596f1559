"""Loop partitioning of non-divisible splits, register-sized vector pieces, dynamic parallel
loops: results against numpy and the shape of the lowered code."""

import math
import os

import numpy as np
import pytest

import compiler
from compiler import te, topi
from compiler.arith import Analyzer
from compiler.runtime import set_num_threads
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.functor import collect
from compiler.tir.transform.loops import vector_pieces
from compiler.tir.transform.partition import true_range


def register_tiled_matmul(n, m, k, tile_m, tile_n):
    """A register tile whose columns are vectorized, M x N not divisible by the tile: without
    loop partitioning every tile carries bound guards and its vectors break up."""
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), "k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, tile_m, tile_n)
    s[C].vectorize(ji)
    s[CC].compute_at(s[C], jo)
    x, y = s[CC].op.axis
    s[CC].reorder(*s[CC].op.reduce_axis, x, y)
    s[CC].unroll(x)
    s[CC].vectorize(y)
    return s, [A, B, C]


def check_matmul(s, args, rng):
    (n, k), (_, m) = args[0].shape, args[1].shape
    a = rng.random((n, k), dtype=np.float32)
    b = rng.random((k, m), dtype=np.float32)
    c = np.zeros((n, m), np.float32)
    mod = compiler.build(s, args)
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    return mod


def vector_widths(f):
    return {n.lanes for n in collect(f.body, lambda n: isinstance(n, E.Ramp))}


def test_partitioned_matmul_has_no_guards_and_full_vectors(rng):
    s, args = register_tiled_matmul(37, 100, 24, 4, 32)
    passes = compiler.lower_passes(s, args)
    assert collect(passes["simplify"].body, _guarded)
    f = passes["simplify_final"]
    assert not collect(f.body, _guarded)
    # main tiles: 16-lane pieces; the last column tile: 100 - 96 = 4 lanes
    assert vector_widths(f) == {16, 4}
    loops = {x.loop_var.name: x.extent.value for x in collect(f.body, _is_loop)}
    assert loops["i.outer"] == 9 and loops["j.outer"] == 3  # 36 rows and 96 columns guard-free
    mod = check_matmul(s, args, rng)
    assert "<16 x float>" in mod.get_source("ll-raw")


def _guarded(n):
    return isinstance(n, S.IfThenElse)


def _is_loop(n):
    return isinstance(n, S.For)


def test_partition_fused_parallel_loop(rng):
    """The guard depends on the fused loop through floordiv: the parallel loop is split too."""
    A, B = te.placeholder((16, 8), name="A"), te.placeholder((8, 40), name="B")
    r = te.reduce_axis(8, "k")
    C = te.compute((16, 40), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 16)
    s[C].reorder(jo, io, ii, ji)
    fused = s[C].fuse(jo, io)
    s[C].parallel(fused)
    s[C].vectorize(ji)
    s[CC].compute_at(s[C], fused)
    s[CC].vectorize(s[CC].op.axis[1])
    args = [A, B, C]
    f = compiler.lower(s, args)
    assert not collect(f.body, _guarded)
    par = [x for x in collect(f.body, _is_loop) if x.kind == "parallel"]
    assert sorted(x.extent.value for x in par) == [4, 8]  # 2 full column tiles x 4 row tiles
    check_matmul(s, args, rng)


def test_unswitch_guard_through_floormod(rng):
    """fuse(io, jo): the column guard depends on floormod of the fused loop, which no partition
    removes; it is tested once per tile, and the common branch is guard-free vector code."""
    A, B = te.placeholder((16, 8), name="A"), te.placeholder((8, 40), name="B")
    r = te.reduce_axis(8, "k")
    C = te.compute((16, 40), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 16)
    fused = s[C].fuse(io, jo)
    s[C].parallel(fused)
    s[C].vectorize(ji)
    s[CC].compute_at(s[C], fused)
    s[CC].vectorize(s[CC].op.axis[1])
    f = compiler.lower(s, [A, B, C])
    (loop,) = collect(f.body, _is_loop)[-1:]
    assert loop.kind == "parallel" and isinstance(loop.body, S.IfThenElse)
    assert not collect(loop.body.then_case, _guarded)
    assert vector_widths(S.PrimFunc("t", [], loop.body.then_case)) == {16}
    check_matmul(s, [A, B, C], rng)


@pytest.mark.parametrize("tile_n", [48, 96, 24])
def test_odd_vector_widths_become_register_pieces(rng, tile_n):
    s, args = register_tiled_matmul(8, 96, 16, 4, tile_n)
    f = compiler.lower(s, args)
    assert max(vector_widths(f)) == 16 and all(w & (w - 1) == 0 for w in vector_widths(f))
    ir = check_matmul(s, args, rng).get_source("ll-raw")
    assert f"<{tile_n} x float>" not in ir


def test_vector_pieces():
    assert vector_pieces(40, 16) == [(0, 16), (16, 16), (32, 8)]
    assert vector_pieces(48, 16) == [(0, 16), (16, 16), (32, 16)]
    assert vector_pieces(7, 16) == [(0, 4), (4, 2), (6, 1)]
    assert vector_pieces(64, 64) == [(0, 64)]


def test_true_range_of_split_guards():
    ana = Analyzer()
    jo, j, f = E.Var("jo"), E.Var("j"), E.Var("f")
    ana.bind(jo, 0, 15)
    ana.bind(j, 0, 63)
    ana.bind(f, 0, 63)
    assert true_range(jo * 64 + j < 1000, jo, ana) == (-math.inf, 14)
    assert true_range(jo * 64 + j <= 999, jo, ana) == (-math.inf, 14)
    assert true_range(jo * 4 + j - 3 >= 0, jo, ana) == (1, math.inf)
    # fused loop: jo = f // 4
    assert true_range(E.FloorDiv(f, 4) * 64 + j < 1000, f, ana) == (-math.inf, 59)
    assert true_range(E.FloorMod(f, 4) < 3, f, ana) is None  # not monotone
    assert true_range(jo * 64 + j != 3, jo, ana) is None


def test_parallel_loop_dynamic_schedule(rng):
    A = te.placeholder((1000, 33), name="A")
    C = te.compute((1000, 33), lambda i, j: A[i, j] * 2.0 + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    s[C].vectorize(C.op.axis[1])
    mod = compiler.build(s, [A, C])
    assert "vta_parallel_for" in mod.get_source("ll-raw")
    a = rng.random((1000, 33), dtype=np.float32)
    for threads in (1, 2):
        set_num_threads(threads)
        c = np.zeros_like(a)
        mod(a, c)
        np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
    set_num_threads(os.cpu_count() or 1)


def test_parallel_loop_after_a_peeled_copy_of_its_nest():
    """Partitioning peels i.inner = 0 into a serial copy of the nest before the parallel loop;
    the outlined parallel body must bind its own loop variables, not capture the copy's
    (found by the random-schedule property test)."""
    n, m, k = 19, 23, 17
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    C = topi.nn.matmul(A, B)
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], 3)
    jo, ji = s[C].split(C.op.axis[1], 1)
    ko, ki = s[C].split(C.op.reduce_axis[0], 1)
    s[C].reorder(ii, io, ko, jo, ji, ki)
    s[C].parallel(ii)
    s[C].unroll(ji)
    rng = np.random.default_rng(0)
    a = rng.random((n, k), dtype=np.float32)
    b = rng.random((k, m), dtype=np.float32)
    c = np.zeros((n, m), np.float32)
    compiler.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
