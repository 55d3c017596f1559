"""Out-of-range indexing: a constant index outside a tensor is refused when the compute is
declared; a data-dependent index (gather/scatter) is checked at run time and raises instead of
reading or writing outside the buffer (before: garbage or a segfault). The check can be turned
off with `bounds_check=False`."""

from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.errors import OperatorError
from compiler.runtime.module import OutOfBoundsError, load_module

N, M = 1024, 16


def test_constant_index_outside_the_tensor_is_refused():
    a = te.placeholder((8, 4), name="A")
    with pytest.raises(
        OperatorError, match=r"tensor A: constant index 13 of axis 0 is outside \[0, 8\)"
    ):
        te.compute((4,), lambda i: a[8 + 5, i])
    with pytest.raises(OperatorError, match="constant index -1 of axis 1"):
        te.compute((4,), lambda i: a[i, -1])


def _gather(**options):
    a = te.placeholder((N,), "float32", "A")
    idx = te.placeholder((M,), "int32", "I")
    b = te.compute((M,), lambda i: a[idx[i]], name="B")
    return compiler.build(te.create_schedule(b.op), [a, idx, b], target="llvm", **options)


@pytest.fixture(scope="module")
def gather():
    return _gather()


def test_gather_in_range_works(gather):
    a = np.arange(N, dtype="float32")
    idx = np.arange(M, dtype="int32")[::-1].copy()
    out = np.zeros(M, "float32")
    gather(a, idx, out)
    np.testing.assert_array_equal(out, a[idx])


@pytest.mark.parametrize("bad", [N, -1, 2**31 - 1, -(2**31)])
def test_gather_out_of_range_raises(gather, bad):
    a = np.arange(N, dtype="float32")
    idx = np.arange(M, dtype="int32")
    idx[5] = bad
    with pytest.raises(
        OutOfBoundsError, match=f"index {bad} into 'A' .extent {N}. is out of range"
    ):
        gather(a, idx, np.zeros(M, "float32"))
    idx[5] = 5  # the record is reset: the next good call succeeds
    out = np.zeros(M, "float32")
    gather(a, idx, out)
    np.testing.assert_array_equal(out, a[:M])


def test_exported_library_keeps_the_check(gather, tmp_path):
    path = str(tmp_path / "gather.so")
    gather.export_library(path)
    lib = load_module(path)
    idx = np.full(M, N + 7, "int32")
    with pytest.raises(OutOfBoundsError, match=f"index {N + 7}"):
        lib(np.zeros(N, "float32"), idx, np.zeros(M, "float32"))


def test_vectorized_gather_is_checked_per_lane():
    a = te.placeholder((N,), "float32", "A")
    idx = te.placeholder((M,), "int32", "I")
    b = te.compute((M,), lambda i: a[idx[i]], name="B")
    s = te.create_schedule(b.op)
    _, inner = s[b].split(b.op.axis[0], 8)
    s[b].vectorize(inner)
    mod = compiler.build(s, [a, idx, b], target="llvm")
    bad = np.arange(M, dtype="int32")
    bad[11] = -3
    with pytest.raises(OutOfBoundsError, match="index -3"):
        mod(np.zeros(N, "float32"), bad, np.zeros(M, "float32"))


def test_the_check_can_be_turned_off():
    mod = _gather(bounds_check=False)
    assert mod.checked == []
    assert "__vta_oob_" not in mod.get_source("ll-raw")
