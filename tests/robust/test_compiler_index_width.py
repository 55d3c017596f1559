"""Tensors of 2**31 elements or more are indexed in 64 bits: before, int8 65536 x 32769 read
through a wrapped 32-bit offset (a segfault), and an extent of 2**31 + 8 failed to build with an
i32/i64 mismatch. Buffers below 2**31 elements keep 32-bit index arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.tir import expr as E
from compiler.tir.functor import collect

ROWS, COLS = 65536, 32769  # 2,147,549,184 elements


def test_last_row_of_a_2gib_tensor_is_read_where_it_is():
    a = te.placeholder((ROWS, COLS), "int8", "A")
    b = te.compute((COLS,), lambda j: a[ROWS - 1, j] + 1, name="B")
    mod = compiler.build(te.create_schedule(b.op), [a, b], target="llvm")
    data = np.zeros((ROWS, COLS), "int8")  # untouched pages cost no memory
    data[ROWS - 1] = np.arange(COLS) % 101
    out = np.zeros(COLS, "int8")
    mod(data, out)
    np.testing.assert_array_equal(out, data[ROWS - 1] + 1)


def test_small_buffers_keep_32_bit_indices():
    a = te.placeholder((1024, 1024), "float32", "A")
    b = te.compute((1024, 1024), lambda i, j: a[i, j] * 2, name="B")
    func = compiler.lower(te.create_schedule(b.op), [a, b])
    load = collect(func.body, lambda n: isinstance(n, E.BufferLoad))[0]
    assert load.indices[0].dtype == "int32"


def test_large_buffers_index_in_64_bits():
    a = te.placeholder((ROWS, COLS), "int8", "A")
    b = te.compute((COLS,), lambda j: a[ROWS - 1, j], name="B")
    func = compiler.lower(te.create_schedule(b.op), [a, b])
    load = collect(func.body, lambda n: isinstance(n, E.BufferLoad))[0]
    assert load.indices[0].dtype == "int64"


def _long_vector(n: int):
    x = te.placeholder((n,), "int8", "X")
    y = te.compute((n,), lambda i: x[i] + 1, name="Y")
    s = te.create_schedule(y.op)
    outer, inner = s[y].split(y.op.axis[0], 64)
    s[y].vectorize(inner)
    s[y].parallel(outer)
    return s, x, y


def test_extent_of_2_to_the_31_plus_8_builds_with_64_bit_loops():
    s, x, y = _long_vector(2**31 + 8)
    assert y.op.axis[0].var.dtype == "int64"
    compiler.build(s, [x, y], target="llvm")


def test_fusing_axes_past_2_to_the_31_gives_a_64_bit_axis():
    a = te.placeholder((ROWS, COLS), "int8", "A")
    b = te.compute((ROWS, COLS), lambda i, j: a[i, j] * 2, name="B")
    s = te.create_schedule(b.op)
    assert s[b].fuse(*b.op.axis).var.dtype == "int64"
    small = te.compute((64, 64), lambda i, j: a[i, j], name="C")
    s = te.create_schedule(small.op)
    assert s[small].fuse(*small.op.axis).var.dtype == "int32"


@pytest.mark.slow
def test_extent_of_2_to_the_31_plus_8_runs():
    """Touches 4 GiB: slow, and skipped where the memory is not there."""
    n = 2**31 + 8
    pytest.importorskip("psutil")
    import psutil

    if psutil.virtual_memory().available < 6 * 2**30:
        pytest.skip("needs 6 GiB of free memory")
    s, x, y = _long_vector(n)
    mod = compiler.build(s, [x, y], target="llvm")
    xs = np.zeros(n, "int8")
    xs[-16:] = np.arange(16)
    ys = np.zeros(n, "int8")
    mod(xs, ys)
    np.testing.assert_array_equal(ys[-16:], np.arange(16) + 1)
    assert ys[0] == 1
