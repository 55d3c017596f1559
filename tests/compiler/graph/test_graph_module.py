"""The native graph executor: kernels at planned arena offsets, one call per inference,
save and load without compiling."""

import numpy as np
import pytest

from compiler import te
from compiler.driver import lower
from compiler.graph.executor import Step, compile_graph
from compiler.graph.graph_module import GraphModule, Slot, TensorSpec
from compiler.runtime import ArgumentError
from compiler.topi import x86


def kernel(name, fn, n=1000):
    """A lowered elementwise kernel of one or two [n] inputs."""
    ins = [te.placeholder((n,), name=f"{name}_in{k}") for k in range(fn.__code__.co_argcount)]
    out = te.compute((n,), lambda i: fn(*[t[i] for t in ins]), name=f"{name}_out")
    return lower(x86.schedule_injective(out), [*ins, out], name)


@pytest.fixture(scope="module")
def graph():
    """y = relu(x + w) * 2 with (x + w) and its relu in the arena; the scale kernel runs twice
    (the same kernel at two steps)."""
    add = kernel("add", lambda a, b: a + b)
    relu = kernel("relu", lambda a: te.max(a, te.const(0.0, "float32")))
    scale = kernel("scale", lambda a: a * 2.0)
    steps = [
        Step(add, [Slot("input", 0), Slot("param", 0), Slot("arena", offset=0)]),
        Step(relu, [Slot("arena", offset=0), Slot("arena", offset=4096)]),
        Step(scale, [Slot("arena", offset=4096), Slot("arena", offset=0)]),
        Step(scale, [Slot("arena", offset=0), Slot("output", 0)]),
    ]
    w = np.linspace(-1, 1, 1000, dtype=np.float32)
    return compile_graph(
        steps, [TensorSpec("x", (1000,))], [TensorSpec("y", (1000,))], [w], 8192
    ), w


def reference(x, w):
    return np.maximum(x + w, 0) * 4


def test_run_matches_numpy(graph):
    g, w = graph
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_allclose(g.run({"x": x})["y"], reference(x, w), rtol=1e-6)


def test_save_and_load_runs_the_same(graph, tmp_path):
    g, w = graph
    g.save(tmp_path / "m")
    loaded = GraphModule.load(tmp_path / "m")
    assert all(p.ctypes.data % 64 == 0 for p in loaded.params)  # np.load aligns to 16 only
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(loaded.run({"x": x})["y"], g.run({"x": x})["y"])
    assert [r["kernel"] for r in loaded.profile({"x": x}, reps=2)] == [
        "add",
        "relu",
        "scale",
        "scale",
    ]


def test_inputs_read_only_strided_or_of_another_type_run_the_same(graph):
    g, w = graph
    x = np.random.default_rng(2).standard_normal(2000)
    want = reference(x[::2].astype(np.float32), w)
    frozen = x[::2].astype(np.float32)
    frozen.flags.writeable = False
    for given in (frozen, x[::2], x[::2].tolist()):
        np.testing.assert_allclose(g.run({"x": given})["y"], want, rtol=1e-6)


def test_inputs_are_checked_by_name(graph):
    g, _ = graph
    with pytest.raises(ArgumentError, match="missing x; unknown z"):
        g.run({"z": np.zeros(1000, np.float32)})
    with pytest.raises(ArgumentError, match=r"'x' has shape \[10\], expected \[1000\]"):
        g.run({"x": np.zeros(10, np.float32)})


def test_overhead_is_measured(graph):
    g, _ = graph
    assert g.overhead_us({"x": np.zeros(1000, np.float32)}, reps=20) > 0


def test_load_of_a_non_model_is_named(tmp_path):
    with pytest.raises(Exception, match="not a compiled model folder"):
        GraphModule.load(tmp_path)


@pytest.mark.parametrize(
    "change, message",
    [
        # a smaller arena than the kernels' offsets assume would be written past its end
        (
            lambda m: m.joinpath("graph.json").write_text(
                m.joinpath("graph.json")
                .read_text()
                .replace('"arena_bytes": 8192', '"arena_bytes": 64')
            ),
            "graph.json was changed after `vta compile`",
        ),
        # a shorter weight would be read past its end
        (
            lambda m: np.savez(m / "params.npz", np.zeros(10, np.float32)),
            "params.npz is missing or not",
        ),
        (lambda m: m.joinpath("graph.so").unlink(), "graph.so is missing or not"),
        (lambda m: m.joinpath("graph.json").write_text("[]"), "graph.json is no object"),
    ],
)
def test_load_refuses_a_changed_folder(graph, tmp_path, change, message):
    """The kernels trust the manifest's offsets and the parameters' shapes: a folder changed
    after saving is refused with a one-line error, not run into a segfault."""
    from compiler.errors import CodegenError

    g, _ = graph
    g.save(tmp_path / "m")
    change(tmp_path / "m")
    with pytest.raises(CodegenError, match=message):
        GraphModule.load(tmp_path / "m")


def test_an_arena_larger_than_the_machine_is_refused(graph, tmp_path, monkeypatch):
    """Memory is committed lazily: an arena the machine cannot hold would be allocated and the
    process killed when a kernel touched it, so it is refused first."""
    from compiler.errors import CodegenError
    from compiler.graph import graph_module

    g, _ = graph
    g.save(tmp_path / "m")
    monkeypatch.setattr(graph_module, "available_memory", lambda: 4096)
    with pytest.raises(
        CodegenError,
        match=r"tensors \(0.0 GiB\), inputs and outputs \(0.0 GiB\) need more than the 0.0",
    ):
        GraphModule.load(tmp_path / "m")
