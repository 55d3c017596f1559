"""The thread pool behind parallel loops: every iteration runs exactly once, whatever the
thread count, the loop size, concurrent callers or a fork."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.codegen import parallel
from compiler.codegen.target import Target
from compiler.runtime import set_num_threads


def counting_kernel(n):
    """out[i] = a[i] + 1 over a parallel loop of n iterations."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    return compiler.build(s, [A, B])


@pytest.fixture
def threads():
    yield set_num_threads
    set_num_threads(parallel.default_threads())


@pytest.mark.parametrize("n", [1, 2, 3, 7, 256, 1000, 3_000_001])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_every_iteration_runs_once(threads, n, nthreads):
    threads(nthreads)
    mod = counting_kernel(n)
    a = np.arange(n, dtype=np.float32)
    b = np.zeros(n, np.float32)
    for _ in range(3):
        mod(a, b)
        np.testing.assert_array_equal(b, a + 1)
        b[:] = 0


def test_concurrent_callers(threads):
    """A loop started while the pool is busy runs on its caller's thread; all are right."""
    threads(2)
    mod = counting_kernel(100_000)
    a = np.random.default_rng(0).random(100_000, dtype=np.float32)
    mod(a, np.zeros_like(a))  # JIT-compiled once, before the threads share it
    errors = []

    def work():
        b = np.zeros_like(a)
        for _ in range(50):
            b[:] = 0
            mod(a, b)
            if not np.array_equal(b, a + 1):
                errors.append("wrong result")

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert not errors and not any(t.is_alive() for t in ts)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_restarts_its_workers(threads):
    threads(2)
    mod = counting_kernel(10_000)
    a = np.ones(10_000, np.float32)
    b = np.zeros_like(a)
    mod(a, b)  # the parent's workers exist
    pid = os.fork()
    if pid == 0:  # the child has no worker threads: the pool must start new ones
        b[:] = 0
        mod(a, b)
        os._exit(0 if np.array_equal(b, a + 1) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_thread_count_is_kept(threads):
    threads(3)
    assert parallel.get_num_threads() == 3
    threads(0)
    assert parallel.get_num_threads() == 1


def test_runtime_object_for_arm():
    obj = parallel.runtime_object(Target.parse("llvm -mtriple=aarch64-linux-gnu"))
    assert obj[:4] == b"\x7fELF"


def test_unsupported_architecture_is_named():
    with pytest.raises(compiler.errors.CodegenError, match="riscv64"):
        parallel.runtime_ir("riscv64-unknown-linux-gnu")


@pytest.mark.parametrize("us", [0, 5, 1000])
def test_worker_spin_setting_keeps_results(threads, us):
    """Workers that sleep at once (0) or spin between loops run every iteration once."""
    threads(2)
    mod = counting_kernel(100_000)
    a = np.arange(100_000, dtype=np.float32)
    try:
        parallel.set_worker_spin_us(us)
        for _ in range(20):
            b = np.zeros_like(a)
            mod(a, b)
            np.testing.assert_array_equal(b, a + 1)
    finally:
        parallel.set_worker_spin_us(parallel.WORKER_SPIN_NS / 1000)


@pytest.mark.parametrize("bad", [-1, 2e6, "soon"])
def test_bad_worker_spin_is_named(bad):
    with pytest.raises(compiler.errors.CodegenError, match="microseconds"):
        parallel.set_worker_spin_us(bad)


def test_worker_spin_from_the_environment():
    """VTA_WORKER_SPIN_US is read when the runtime loads; a bad value is a one-line error."""
    code = (
        "from compiler.codegen import parallel\n"
        "try:\n    parallel.load_runtime()\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n"
    )
    env = {**os.environ, "VTA_WORKER_SPIN_US": "soon"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.startswith("CodegenError VTA_WORKER_SPIN_US must be a number")
    env["VTA_WORKER_SPIN_US"] = "2e6"  # out of range
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.startswith("CodegenError VTA_WORKER_SPIN_US must be 0 to 1000000")
    env["VTA_WORKER_SPIN_US"] = "0"  # a valid value loads without a word
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == ""
