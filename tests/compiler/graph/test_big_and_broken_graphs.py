"""Graphs of thousands of nodes import, pass and compile without recursing per node; models
that break ONNX's rules are refused in one line naming what is wrong."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import OperatorError
from compiler.graph import reference
from compiler.graph.build_onnx import compile_model
from compiler.graph.onnx_import import MAX_CONCAT_INPUTS, import_onnx
from compiler.graph.passes import run_passes
from compiler.graph.passes.fuse import MAX_GROUP_NODES

N = 3000


def chain(path, op: str, n: int = N):
    """x -> op -> op -> ... -> y: n nodes, Add's second input a constant row."""
    nodes, prev = [], "x"
    for k in range(n):
        out = "y" if k == n - 1 else f"t{k}"
        nodes.append(helper.make_node(op, [prev, "b"] if op == "Add" else [prev], [out]))
        prev = out
    b = numpy_helper.from_array(np.linspace(-0.01, 0.01, 8, dtype=np.float32).reshape(1, 8), "b")
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [b] if op == "Add" else [],
    )
    path.write_bytes(helper.make_model(graph).SerializeToString())
    return path, b


@pytest.mark.parametrize("op", ["Relu", "Add"])
def test_a_chain_of_thousands_of_nodes_compiles_and_matches_numpy(tmp_path, op):
    path, b = chain(tmp_path / "chain.onnx", op)
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    want = np.maximum(x, 0)
    if op == "Add":
        want = x.copy()
        for _ in range(N):
            want = want + numpy_helper.to_array(b)
    graph, _ = run_passes(import_onnx(path))
    assert len(graph.nodes) == N
    # a group's kernel inlines its nodes into one expression: the chain is split
    assert max(len(g.nodes) for g in graph.groups) == MAX_GROUP_NODES
    assert len(graph.groups) == -(-N // MAX_GROUP_NODES)
    (ref,) = reference.run(graph, {"x": x}).values()
    np.testing.assert_allclose(ref, want, rtol=1e-5, atol=1e-5)
    (got,) = compile_model(path).run({"x": x}).values()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def tiny(path, nodes, inits=(), opset=13, outputs=("y",)):
    graph = helper.make_graph(
        nodes,
        "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info(t, TensorProto.FLOAT, [1, 8]) for t in outputs],
        list(inits),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path.write_bytes(model.SerializeToString())
    return path


def huge_initializer(name="w"):
    """dims claiming 1.6e12 floats over 16 bytes of data (helper.make_tensor refuses it)."""
    return onnx.TensorProto(
        name=name, data_type=TensorProto.FLOAT, dims=[1_600_000, 1_000_000], raw_data=bytes(16)
    )


BROKEN = {
    "ssa": (
        dict(
            nodes=[
                helper.make_node("Relu", ["x"], ["y"], name="a"),
                helper.make_node("Sigmoid", ["x"], ["y"], name="b"),
            ]
        ),  # fmt: skip
        "node b (Sigmoid) writes y, which node a (Relu) already defines (each value is written "
        "once)",
    ),
    "writes an input": (
        dict(
            nodes=[
                helper.make_node("Relu", ["x"], ["x"], name="a"),
                helper.make_node("Relu", ["x"], ["y"], name="b"),
            ]
        ),  # fmt: skip
        "node a (Relu) writes x, which graph input x already defines",
    ),
    "undefined input": (
        dict(nodes=[helper.make_node("Add", ["x", "z"], ["y"], name="a")]),
        "node a (Add): input z is not produced by any earlier node",
    ),
    "undefined output": (
        dict(nodes=[helper.make_node("Relu", ["x"], ["t"])]),
        "graph output y is not computed by any node",
    ),
    "opset 1000": (
        dict(nodes=[helper.make_node("Relu", ["x"], ["y"])], opset=1000),
        "the model uses ONNX opset 1000; the installed onnx package knows opsets up to "
        f"{onnx.defs.onnx_opset_version()}",
    ),
    "huge initializer": (
        dict(nodes=[helper.make_node("Add", ["x", "w"], ["y"])], inits=[huge_initializer()]),
        "initializer w: dims [1600000, 1000000] declare 1600000000000 elements "
        "(6400000000000 bytes), the data holds 16 bytes",
    ),
    "short typed data": (
        dict(
            nodes=[helper.make_node("Add", ["x", "w"], ["y"])],
            inits=[
                onnx.TensorProto(
                    name="w", data_type=TensorProto.FLOAT, dims=[1, 8], float_data=[1.0, 2.0]
                )
            ],  # fmt: skip
        ),
        "initializer w: dims [1, 8] declare 8 elements (8 float_data entries), the data holds 2",
    ),
    "huge constant": (
        dict(
            nodes=[
                helper.make_node("Constant", [], ["w"], name="c", value=huge_initializer("v")),
                helper.make_node("Add", ["x", "w"], ["y"]),
            ]
        ),
        "node c (Constant): value: dims [1600000, 1000000] declare 1600000000000 elements",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_models_are_one_line_errors(tmp_path, case):
    kwargs, message = BROKEN[case]
    path = tiny(tmp_path / "m.onnx", **kwargs)
    with pytest.raises(OperatorError) as e:
        import_onnx(path)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_a_concat_of_thousands_of_inputs_compiles_as_a_tree(tmp_path):
    """A kernel of more than 1024 arguments cannot be called through ctypes (the executor's
    per-kernel profile binds each): a Concat of many inputs imports as Concats of at most
    MAX_CONCAT_INPUTS."""
    n = 1100
    names = [f"r{k}" for k in range(n)]
    nodes = [helper.make_node("Mul", ["x", f"s{k}"], [names[k]]) for k in range(n)]
    nodes.append(helper.make_node("Concat", names, ["y"], axis=1))
    scales = {f"s{k}": np.float32(k) for k in range(n)}
    graph = helper.make_graph(
        nodes,
        "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3 * n])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in scales.items()],
    )
    path = tmp_path / "wide.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    graph = import_onnx(path)
    assert max(len(n.inputs) for n in graph.nodes) == MAX_CONCAT_INPUTS
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    want = np.concatenate([x * np.float32(k) for k in range(n)], axis=1)
    (got,) = compile_model(path).run({"x": x}).values()
    np.testing.assert_allclose(got, want, rtol=1e-6)
