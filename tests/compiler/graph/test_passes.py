"""Graph passes: each keeps the graph's function (checked with the reference executor) while
folding batch norms and constants, removing copies, merging reshapes and fusing by kind."""

import numpy as np
import pytest

from compiler.graph import reference
from compiler.graph.ir import Graph, Node, Pattern, Value
from compiler.graph.onnx_import import import_onnx
from compiler.graph.passes import (
    extract_tasks,
    fold_batch_norm,
    fold_constants,
    fuse,
    infer_shapes,
    run_passes,
    simplify,
)
from compiler.zoo import NETWORKS, random_inputs, resnet18

rng = np.random.default_rng(0)


def graph(nodes, shape, outputs, consts=()) -> Graph:
    g = Graph(nodes, ["x"], outputs, {"x": Value("x", shape, "float32")})
    for k, v in dict(consts).items():
        g.add_constant(k, np.asarray(v, np.float32))
    return infer_shapes(g)


def same_function(before: Graph, after: Graph, shape) -> None:
    x = {"x": rng.standard_normal(shape).astype(np.float32)}
    want, got = reference.run(before, x), reference.run(after, x)
    assert list(want) == list(got)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)


def bn_params(c):
    return {
        "g": rng.uniform(0.5, 1.5, c), "b": rng.uniform(-1, 1, c), "m": rng.uniform(-1, 1, c),
        "v": rng.uniform(0.5, 1.5, c),
    }  # fmt: skip


def copy(g: Graph) -> Graph:
    import copy as c

    return c.deepcopy(g)


def test_batch_norm_folds_into_conv_and_gemm():
    conv = {"auto_pad": "NOTSET", "dilations": [1, 1], "group": 1, "kernel_shape": [3, 3],
            "pads": [1, 1, 1, 1], "strides": [1, 1]}  # fmt: skip
    nodes = [
        Node("Conv", ["x", "w"], ["c"], conv),
        Node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], {"epsilon": 1e-5}),
        Node("Flatten", ["n"], ["f"], {"axis": 1}),
        Node("Gemm", ["f", "fw"], ["d"], {"alpha": 2.0, "beta": 1.0, "transA": 0, "transB": 1}),
        Node("BatchNormalization", ["d", "g2", "b2", "m2", "v2"], ["y"], {"epsilon": 1e-3}),
    ]
    p2 = {f"{k}2": v for k, v in bn_params(5).items()}
    consts = {"w": rng.standard_normal((4, 3, 3, 3)), "fw": rng.standard_normal((5, 64)),
              **bn_params(4), **p2}  # fmt: skip
    g = graph(nodes, (1, 3, 4, 4), ["y"], consts)
    folded = fold_batch_norm(copy(g))
    assert [n.op for n in folded.nodes] == ["Conv", "Flatten", "Gemm"]
    assert folded.nodes[-1].outputs == ["y"] and len(folded.nodes[0].inputs) == 3
    same_function(g, folded, (1, 3, 4, 4))


def test_batch_norm_after_a_shared_conv_output_becomes_scale_and_shift():
    conv = {"auto_pad": "NOTSET", "dilations": [1, 1], "group": 1, "kernel_shape": [1, 1],
            "pads": [0, 0, 0, 0], "strides": [1, 1]}  # fmt: skip
    nodes = [
        Node("Conv", ["x", "w"], ["c"], conv),
        Node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], {"epsilon": 1e-5}),
        Node("Add", ["n", "c"], ["y"]),
    ]
    g = graph(nodes, (1, 2, 3, 3), ["y"], {"w": rng.standard_normal((2, 2, 1, 1)), **bn_params(2)})
    folded = fold_batch_norm(copy(g))
    assert [n.op for n in folded.nodes] == ["Conv", "Mul", "Add", "Add"]
    assert folded.value(folded.nodes[1].inputs[1]).shape == (2, 1, 1)
    same_function(g, folded, (1, 2, 3, 3))


def test_constants_fold():
    nodes = [
        Node("Mul", ["a", "b"], ["ab"]),
        Node("Relu", ["ab"], ["r"]),
        Node("Add", ["x", "r"], ["y"]),
    ]
    g = graph(nodes, (3,), ["y"], {"a": [1, -2, 3], "b": [2, 2, 2]})
    folded = fold_constants(copy(g))
    assert [n.op for n in folded.nodes] == ["Add"] and set(folded.constants) == {"r"}
    np.testing.assert_array_equal(folded.constants["r"], [2, 0, 6])
    same_function(g, folded, (3,))


def test_simplify_removes_copies_and_merges_reshapes():
    nodes = [
        Node("Identity", ["x"], ["i"]),
        Node("Reshape", ["i"], ["r1"], {"shape": [6, 4], "allowzero": 0}),
        Node("Dropout", ["r1"], ["d"]),
        Node("Flatten", ["d"], ["r2"], {"axis": 0}),
        Node("Reshape", ["r2"], ["r3"], {"shape": [2, 12], "allowzero": 0}),
        Node("Reshape", ["r3"], ["r4"], {"shape": [2, 12], "allowzero": 0}),
        Node("Relu", ["r4"], ["a"]),
        Node("Identity", ["a"], ["y"]),
        Node("Identity", ["x"], ["z"]),  # a graph output copying the input stays
    ]
    g = graph(nodes, (2, 3, 4), ["y", "z"])
    s = simplify(copy(g))
    assert [(n.op, n.inputs, n.outputs) for n in s.nodes] == [
        ("Reshape", ["x"], ["r4"]),
        ("Relu", ["r4"], ["y"]),
        ("Identity", ["x"], ["z"]),
    ]
    assert s.nodes[0].attrs["shape"] == [2, 12]
    same_function(g, s, (2, 3, 4))


def test_simplify_makes_a_matmul_of_n_d_rows_2_d_with_its_bias_and_gelu():
    """MatMul([2, 3, 4] x constant [4, 5]) runs on 6 rows; the bias, arithmetic of GELU's
    shape (not GELU: x / 1.3; two rows operands) and a constant [1, 1, 5] follow it on the
    rows; a residual of another value and a per-position constant stay after the Reshape
    back."""
    half = Node("Mul", ["h"], ["m"])
    nodes = [
        Node("MatMul", ["x", "w"], ["p"]),
        Node("Add", ["p", "b"], ["h"]),
        Node("Div", ["h", "r2"], ["d"]),
        Node("Erf", ["d"], ["e"]),
        Node("Add", ["e", "one"], ["e1"]),
        Node("Mul", ["h", "half"], half.outputs),
        Node("Mul", ["m", "e1"], ["g"]),
        Node("Mul", ["g", "c3"], ["g3"]),
        Node("Add", ["g3", "pos"], ["y"]),
    ]
    consts = {"w": rng.standard_normal((4, 5)), "b": rng.standard_normal(5), "r2": 1.3,
              "one": 1.0, "half": 0.5, "c3": rng.standard_normal((1, 1, 5)),
              "pos": rng.standard_normal((3, 5))}  # fmt: skip
    g = graph(nodes, (2, 3, 4), ["y"], consts)
    s = simplify(copy(g))
    ops = [(n.op, s.value(n.outputs[0]).shape) for n in s.nodes]
    assert ops == [("Reshape", (6, 4)), ("MatMul", (6, 5)), ("Add", (6, 5)), ("Div", (6, 5)),
                   ("Erf", (6, 5)), ("Add", (6, 5)), ("Mul", (6, 5)), ("Mul", (6, 5)),
                   ("Mul", (6, 5)), ("Reshape", (2, 3, 5)), ("Add", (2, 3, 5))]  # fmt: skip
    assert s.constants[s.nodes[8].inputs[1]].shape == (5,)
    same_function(g, s, (2, 3, 4))


@pytest.mark.parametrize("form", ["half first", "half last", "times root half"])
def test_simplify_makes_gelu_written_with_erf_one_node(form):
    """x * 0.5 * (1 + erf(x / sqrt 2)) in the orders exporters write it becomes Gelu; with
    another constant (0.4 for 0.5) it stays as written."""
    scaled = (Node("Mul", ["x", "rh"], ["d"]) if form == "times root half"
              else Node("Div", ["x", "r2"], ["d"]))  # fmt: skip
    nodes = [scaled, Node("Erf", ["d"], ["e"]), Node("Add", ["one", "e"], ["a"])]
    if form == "half last":
        nodes += [Node("Mul", ["x", "a"], ["m"]), Node("Mul", ["m", "half"], ["y"])]
    else:
        nodes += [Node("Mul", ["half", "x"], ["m"]), Node("Mul", ["a", "m"], ["y"])]
    consts = {"r2": np.sqrt(2), "rh": np.sqrt(0.5), "one": 1.0, "half": 0.5}
    g = graph(nodes, (2, 3), ["y"], consts)
    s = simplify(copy(g))
    assert [(n.op, n.inputs, n.outputs) for n in s.nodes] == [("Gelu", ["x"], ["y"])]
    same_function(g, s, (2, 3))
    other = graph(nodes, (2, 3), ["y"], {**consts, "half": 0.4})
    assert "Gelu" not in [n.op for n in simplify(copy(other)).nodes]


def test_fusion_by_pattern_kind():
    nodes = [
        Node("Transpose", ["x"], ["t"], {"perm": [0, 2, 1]}),
        Node("Reshape", ["t"], ["r"], {"shape": [2, 4, 3], "allowzero": 0}),
        Node("ReduceSum", ["r"], ["s"], {"axes": [2], "keepdims": 1, "noop_with_empty_axes": 0}),
        Node("Sigmoid", ["s"], ["e"]),
        Node("Softmax", ["e"], ["sm"], {"axis": 1}),
        Node("Relu", ["sm"], ["a"]),
        Node("Add", ["a", "sm"], ["y"]),
    ]
    g = fuse(graph(nodes, (2, 3, 4), ["y"]))
    kinds = [(g_.pattern, [n.op for n in g_.nodes]) for g_ in g.groups]
    assert kinds == [
        (Pattern.REDUCTION, ["Transpose", "Reshape", "ReduceSum", "Sigmoid"]),
        (Pattern.OPAQUE, ["Softmax"]),
        (Pattern.BROADCAST, ["Relu", "Add"]),
    ]
    two_readers = graph([*nodes[:2], Node("Relu", ["r"], ["a"]), Node("Add", ["a", "r"], ["y"])],
                        (2, 3, 4), ["y"])  # fmt: skip
    assert [[n.op for n in g_.nodes] for g_ in fuse(two_readers).groups] == [
        ["Transpose", "Reshape"],
        ["Relu", "Add"],
    ]


def test_resnet18_fuses_into_conv_groups_and_tasks():
    g, tasks = run_passes(import_onnx(resnet18()))
    ops = [[n.op for n in grp.nodes] for grp in g.groups]
    assert len(ops) == 24 and ops.count(["Conv", "Add", "Relu"]) == 8
    assert ops.count(["Conv", "Relu"]) == 9 and ops.count(["Conv"]) == 3
    assert all(grp.pattern is Pattern.OUT_FUSABLE for grp in g.groups if grp.nodes[0].op == "Conv")
    assert len(tasks) == 19 and sum(t.weight for t in tasks) == 24
    assert max(t.weight for t in tasks) == 2
    assert extract_tasks(g)[3].describe(g).startswith("Conv+Add+Relu(float32[1,64,56,56]")


@pytest.mark.parametrize("name", ["mobilenet_v1", "dqn"])
def test_passes_keep_the_network_function(name):
    imported = import_onnx(NETWORKS[name]())
    g, _ = run_passes(copy(imported))
    assert not any(n.op == "BatchNormalization" for n in g.nodes)
    x = random_inputs(name)
    (want,), (got,) = reference.run(imported, x).values(), reference.run(g, x).values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_print_passes_prints_the_graph_after_each_pass():
    lines = []
    run_passes(import_onnx(NETWORKS["dqn"]()), print_passes=True, out=lines.append)
    heads = [t.splitlines()[0] for t in lines]
    assert heads == ["== import ==", "== infer_shapes ==", "== fold_constants ==",
                     "== fold_batch_norm ==", "== simplify ==", "== fuse_attention ==",
                     "== fuse ==", "== extract_tasks =="]  # fmt: skip
    assert "group conv_3 [out_fusable] {" in lines[6]
    assert "task 4: Gemm+Relu(float32[1,3136], float32[512,3136], float32[512]) x1" in lines[7]
