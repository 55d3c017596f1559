"""Generated CPU functions check their arguments before native code runs: read-only outputs,
wrong dtypes, shapes and layouts are refused naming the argument; the lazy JIT is thread-safe."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.runtime.module import ArgumentError, load_module

N = 64


@pytest.fixture(scope="module")
def double():
    a = te.placeholder((N,), name="A")
    b = te.compute((N,), lambda i: a[i] * 2, name="B")
    return compiler.build(te.create_schedule(b.op), [a, b], target="llvm")


def test_signature_records_which_buffers_are_written(double):
    assert [(p["name"], p["written"]) for p in double.signature] == [("A", False), ("B", True)]


def test_read_only_input_is_accepted(double):
    a = np.frombuffer(np.arange(N, dtype="float32").tobytes(), dtype="float32")
    b = np.zeros(N, "float32")
    double(a, b)
    np.testing.assert_array_equal(b, 2 * a)


@pytest.mark.parametrize("kind", ["frombuffer", "flag", "memmap"])
def test_read_only_output_is_refused_and_untouched(double, kind, tmp_path):
    if kind == "frombuffer":
        out = np.frombuffer(bytes(4 * N), dtype="float32")
    elif kind == "flag":
        out = np.zeros(N, "float32")
        out.flags.writeable = False
    else:
        path = tmp_path / "out.bin"
        np.zeros(N, "float32").tofile(path)
        out = np.memmap(path, dtype="float32", mode="r", shape=(N,))
    with pytest.raises(ArgumentError, match="argument 'B' is read-only"):
        double(np.ones(N, "float32"), out)
    assert not out.any()


@pytest.mark.parametrize(
    "arrays, message",
    [
        ((np.ones(N, "float64"), np.zeros(N, "float32")), "'A' has dtype float64"),
        ((np.ones(N + 1, "float32"), np.zeros(N, "float32")), "'A' has shape"),
        ((np.ones(2 * N, "float32")[::2], np.zeros(N, "float32")), "'A' must be C-contiguous"),
        ((np.ones(N, "float32"),), "takes 2 arrays"),
        (([1.0] * N, np.zeros(N, "float32")), "'A' must be a numpy array"),
    ],
)
def test_bad_arguments_are_named(double, arrays, message):
    with pytest.raises(ArgumentError, match=message):
        double(*arrays)


def test_exported_library_checks_writes_too(double, tmp_path):
    path = str(tmp_path / "double.so")
    double.export_library(path)
    lib = load_module(path)
    with pytest.raises(ArgumentError, match="read-only"):
        lib(np.ones(N, "float32"), np.frombuffer(bytes(4 * N), dtype="float32"))


def test_first_calls_from_many_threads_share_one_engine():
    a = te.placeholder((N,), name="A")
    b = te.compute((N,), lambda i: a[i] + 1, name="B")
    mod = compiler.build(te.create_schedule(b.op), [a, b], target="llvm")
    barrier, results, engines = threading.Barrier(8), [], set()

    def call():
        out = np.zeros(N, "float32")
        barrier.wait()
        mod(np.ones(N, "float32"), out)
        results.append(float(out.sum()))
        engines.add(id(mod._engine))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [2.0 * N] * 8
    assert len(engines) == 1
