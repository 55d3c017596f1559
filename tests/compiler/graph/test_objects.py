"""A graph's kernels compiled by several processes: shared out, errors raised here, a child
that dies or hangs replaced by this process."""

import os
import time

import numpy as np
import pytest

from compiler.codegen.target import Target
from compiler.errors import OperatorError
from compiler.graph import objects
from compiler.graph.executor import Step, compile_graph
from compiler.graph.graph_module import Slot, TensorSpec
from compiler.graph.objects import Kernel, compile_objects

from .test_graph_module import kernel

PARENT = os.getpid()


def _adds(name, c):
    """A Kernel lowering the kernel of a + c."""
    return Kernel(name, lambda: kernel(name, lambda a: a + float(c)))


def _kernels(n=6):
    return [_adds(f"k{k}", k) for k in range(n)]


def _graph(kernels, processes):
    """x + 0 + 1 + ... through every kernel in turn."""
    steps, slot = [], Slot("input", 0)
    for k, kern in enumerate(kernels):
        out = Slot("output", 0) if k == len(kernels) - 1 else Slot("arena", offset=4096 * (k % 2))
        steps.append(Step(kern, [slot, out]))
        slot = out
    return compile_graph(
        steps, [TensorSpec("x", (1000,))], [TensorSpec("y", (1000,))], [], 8192,
        processes=processes,
    )  # fmt: skip


def _run(graph, n):
    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(graph.run({"x": x})["y"], x + sum(range(n)))


def test_kernels_are_shared_out_between_processes(tmp_path):
    """Each kernel in an object of its own; the child compiled some (the parent waits for
    nothing it could do itself)."""
    kernels = _kernels()
    paths = compile_objects(kernels, Target.parse("llvm"), tmp_path, processes=2)
    assert [p.name for p in paths] == [f"kernel{k}.o" for k in range(6)]
    claimed = (tmp_path / "child1.claimed").read_text().split()
    assert claimed and len(claimed) < len(kernels)
    _run(_graph(_kernels(), processes=2), 6)


def _fails_in_child(name):
    def lower():
        if os.getpid() != PARENT:
            raise OperatorError(f"kernel {name}: cannot be lowered")
        time.sleep(0.5)  # so the child claims something
        return kernel(name, lambda a: a + 0.0)

    return Kernel(name, lower)


def test_a_compiler_error_in_a_child_is_raised_here():
    with pytest.raises(OperatorError, match="cannot be lowered"):
        _graph([_fails_in_child(f"e{k}") for k in range(4)], processes=2)


def _dies_in_child(name, how):
    def lower():
        if os.getpid() != PARENT:
            if how == "die":
                os.kill(os.getpid(), 9)
            time.sleep(3600)
        time.sleep(0.2)
        return kernel(name, lambda a: a + 0.0)

    return Kernel(name, lower)


@pytest.mark.parametrize("how", ["die", "hang"])
def test_a_child_that_dies_or_hangs_is_replaced(monkeypatch, tmp_path, how):
    monkeypatch.setattr(objects, "CHILD_DEADLINE_S", 1.0)
    killed = []
    kill = objects._kill
    monkeypatch.setattr(objects, "_kill", lambda pid: killed.append(pid) or kill(pid))
    kernels = [_dies_in_child(f"d{k}", how) for k in range(4)]
    paths = compile_objects(kernels, Target.parse("llvm"), tmp_path, processes=2)
    assert all(p.exists() for p in paths) and len(paths) == 4  # the child's: compiled here
    assert not (tmp_path / "child1.claimed").exists()
    assert len(killed) == (1 if how == "hang" else 0)  # the hung child stopped at its deadline
    if how == "die":
        _run(_graph(kernels, processes=2), 0)


def test_kernels_of_the_most_flops_are_compiled_first():
    from compiler.graph.executor import _unique_kernels

    a, b, c = _adds("a", 1), _adds("b", 2), _adds("c", 3)
    steps = [Step(a, [], flops=10), Step(b, [], flops=30), Step(c, [], flops=20)]
    steps.append(Step(a, [], flops=40))  # a kernel at two steps: its largest call counts
    assert [k.name for k in _unique_kernels(steps)] == ["a", "b", "c"]
