"""The operators beyond the convolutional networks' (elementwise math and activations,
variadic Max/Min/Sum/Mean): seeded one-node models on the reference executor and compiled
for the CPU, both against onnxruntime; and fused into a convolution's group."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.graph import reference
from compiler.graph.build_onnx import compile_model, lower_groups
from compiler.graph.onnx_import import import_onnx
from compiler.graph.passes import run_passes

ort = pytest.importorskip("onnxruntime")

from testkit.onnx_models import check, one_node  # noqa: E402


def uniform(lo, hi, shape=(3, 4, 5), seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


NORMAL = uniform(-3, 3)
UNARY = {  # op: (input, attributes)
    "Abs": (NORMAL, {}),
    "Neg": (NORMAL, {}),
    "Exp": (NORMAL, {}),
    "Log": (uniform(0.01, 10), {}),
    "Sqrt": (uniform(0, 10), {}),
    "Reciprocal": (uniform(0.5, 3), {}),
    "Erf": (NORMAL, {}),
    "Sin": (NORMAL, {}),
    "Cos": (NORMAL, {}),
    "Tan": (uniform(-1.4, 1.4), {}),
    "Asin": (uniform(-0.99, 0.99), {}),
    "Acos": (uniform(-0.99, 0.99), {}),
    "Atan": (NORMAL, {}),
    "Sinh": (NORMAL, {}),
    "Cosh": (NORMAL, {}),
    "Asinh": (NORMAL, {}),
    "Acosh": (uniform(1, 10), {}),
    "Atanh": (uniform(-0.99, 0.99), {}),
    "Floor": (NORMAL, {}),
    "Ceil": (NORMAL, {}),
    "Round": (np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6, 3.7], np.float32), {}),
    "Sign": (np.array([-2.0, 0.0, 3.0, -0.0, 1e-30], np.float32), {}),
    "Elu": (NORMAL, {}),
    "Elu_alpha": (NORMAL, {"alpha": 0.4}),
    "Selu": (NORMAL, {}),
    "Selu_attrs": (NORMAL, {"alpha": 1.2, "gamma": 0.8}),
    "Celu": (NORMAL, {}),
    "Celu_alpha": (NORMAL, {"alpha": 2.5}),
    "Celu_negative": (NORMAL, {"alpha": -1.5}),
    "ThresholdedRelu": (NORMAL, {}),
    "ThresholdedRelu_alpha": (NORMAL, {"alpha": -0.5}),
    "Softplus": (uniform(-30, 30), {}),
    "Softsign": (NORMAL, {}),
    "HardSigmoid": (NORMAL, {}),
    "HardSigmoid_attrs": (NORMAL, {"alpha": 0.5, "beta": 0.1}),
    "HardSwish": (NORMAL, {}),
    "Mish": (NORMAL, {}),
}


@pytest.mark.parametrize("case", list(UNARY))
def test_unary_operator(tmp_path, case):
    x, attrs = UNARY[case]
    check(tmp_path, one_node(case.split("_")[0], {"x": x}, attrs), {"x": x})


@pytest.mark.parametrize("approximate", [None, "none", "tanh"])
def test_gelu_at_opset_20(tmp_path, approximate):
    attrs = {} if approximate is None else {"approximate": approximate}
    check(tmp_path, one_node("Gelu", {"x": NORMAL}, attrs, opset=20), {"x": NORMAL})


def test_erf_on_the_cpu_is_within_onnx_tolerance_everywhere(tmp_path):
    """Erf is computed by arithmetic on the CPU (vectorized): tiny, small, large and infinite
    arguments of both signs, NaN."""
    import math

    x = np.concatenate([np.linspace(-6, 6, 4001), np.logspace(-9, 1.5, 400),
                        -np.logspace(-9, 1.5, 400), [0.0, np.inf, -np.inf, np.nan]])  # fmt: skip
    x = x.astype(np.float32).reshape(1, -1)
    (tmp_path / "m.onnx").write_bytes(one_node("Erf", {"x": x}))
    (got,) = compile_model(tmp_path / "m.onnx").run({"x": x}).values()
    want = np.array([math.erf(v) for v in x.ravel().tolist()]).reshape(x.shape)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-7, equal_nan=True)


def test_a_chain_of_erf_and_gelu_nodes(tmp_path):
    """Erf is one call in the kernel's expression (its arithmetic emitted by the code
    generator), so a fused chain of them stays small: Gelu(Erf(Erf(Gelu(Erf(x)))))."""
    import math

    x = uniform(-3, 3, (4, 16))
    ops = ["Erf", "Gelu", "Erf", "Erf", "Gelu"]
    nodes = [helper.make_node(op, [f"t{k}"], [f"t{k + 1}"]) for k, op in enumerate(ops)]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info(f"t{len(ops)}", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    (got,) = compile_model(tmp_path / "m.onnx").run({"t0": x}).values()
    erf = np.vectorize(math.erf)
    want = x.astype(np.float64)
    for op in ops:
        want = erf(want) if op == "Erf" else 0.5 * want * (1 + erf(want / np.sqrt(2)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_batched_matmul_of_heads(tmp_path):
    """Per-head products as attention makes them: [1, 4, 16, 8] x [1, 4, 8, 16] (register
    tiles over batches), scaled and masked in the same kernel; a product transposed after it
    (its own stage); [4, 16, 8] x [8, 16] broadcast over the batch."""
    a, b = uniform(-1, 1, (1, 4, 16, 8)), uniform(-1, 1, (1, 4, 8, 16), seed=1)
    mask = uniform(-1, 0, (1, 1, 1, 16), seed=2)
    nodes = [helper.make_node("MatMul", ["a", "b"], ["s"]),
             helper.make_node("Div", ["s", "root"], ["d"]),
             helper.make_node("Add", ["d", "mask"], ["y"]),
             helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["a3", "w"], ["u"])]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "heads",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
         for k, v in {"a": a, "b": b, "mask": mask, "a3": a[0]}.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in "ytu"],
        [numpy_helper.from_array(np.float32(2.0), "root"),
         numpy_helper.from_array(uniform(-1, 1, (8, 16), seed=3), "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    check(tmp_path, model.SerializeToString(), {"a": a, "b": b, "mask": mask, "a3": a[0]})


@pytest.mark.parametrize("scale,mask", [("Div", True), ("Mul", False), (None, True)])
def test_attention_is_one_node_and_kernel(tmp_path, scale, mask):
    """MatMul(Q, K^T), a scale, an additive mask (a run-time input, -10000 on padding keys),
    Softmax and MatMul by V: one Attention node (the CPU's kernel computes a query row at a
    time) matching onnxruntime; the scores computed once per row in its kernel."""
    q, kt = uniform(-2, 2, (1, 2, 8, 4)), uniform(-2, 2, (1, 2, 4, 8), seed=1)
    v = uniform(-1, 1, (1, 2, 8, 3), seed=2)
    feeds = {"q": q, "kt": kt, "v": v}
    nodes, t = [helper.make_node("MatMul", ["q", "kt"], ["s"])], "s"
    consts = []
    if scale:
        nodes.append(helper.make_node(scale, [t, "c"], ["scaled"]))
        consts.append(numpy_helper.from_array(np.float32(2.0), "c"))
        t = "scaled"
    if mask:
        feeds["mask"] = np.where(np.arange(8) < 6, 0, -1e4).astype(np.float32).reshape(1, 1, 1, 8)
        nodes.append(helper.make_node("Add", [t, "mask"], ["masked"]))
        t = "masked"
    nodes += [helper.make_node("Softmax", [t], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"])]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "attention",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, x.shape) for k, x in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    model = model.SerializeToString()
    g, _ = run_passes(import_onnx(model))
    assert [n.op for n in g.nodes] == ["Attention"]
    assert g.nodes[0].attrs["scale"] == {"Div": 0.5, "Mul": 2.0, None: 1.0}[scale]
    check(tmp_path, model, feeds)


def test_attention_is_not_fused_where_the_scores_are_read_elsewhere():
    x = uniform(-1, 1, (2, 4, 4))
    nodes = [helper.make_node("MatMul", ["x", "x"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "x"], ["y"]),
             helper.make_node("Add", ["y", "s"], ["z"])]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    g, _ = run_passes(import_onnx(model.SerializeToString()))
    assert "Attention" not in [n.op for n in g.nodes] and "Softmax" in [n.op for n in g.nodes]


@pytest.mark.parametrize(
    "op,attrs,weight",
    [("Conv", {"pads": [2, 1], "strides": [2], "dilations": [2]}, (6, 4, 3)),
     ("Conv", {"group": 2, "auto_pad": "SAME_UPPER"}, (4, 2, 4)),
     ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, None),
     ("AveragePool", {"kernel_shape": [2], "count_include_pad": 1, "pads": [1, 0]}, None)],
)  # fmt: skip
def test_one_dimensional_windows(tmp_path, op, attrs, weight):
    """Conv and pools on [N, C, L]: the 2-d operators on a unit height."""
    x = uniform(-1, 1, (2, 4, 11))
    consts = None
    if weight:
        consts = {"w": uniform(-1, 1, weight, seed=1), "b": uniform(-1, 1, weight[:1], 2)}
    check(tmp_path, one_node(op, {"x": x}, attrs, consts), {"x": x})


def test_gelu_refuses_an_unknown_approximation():
    from compiler.errors import OperatorError

    with pytest.raises(OperatorError, match="approximate='fast' is not supported"):
        import_onnx(one_node("Gelu", {"x": NORMAL}, {"approximate": "fast"}, opset=20))


@pytest.mark.parametrize(
    "slope", [uniform(-1, 1, (5,)), uniform(-1, 1, (4, 1)), np.float32(0.2), NORMAL]
)
def test_prelu_broadcasts_the_slope(tmp_path, slope):
    check(tmp_path, one_node("PRelu", {"x": NORMAL}, consts={"s": slope}), {"x": NORMAL})


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("shapes", [[(3, 4, 5)], [(3, 1, 5), (4, 1), (5,)], [(2, 3), (2, 3)]])
def test_variadic_operator_broadcasts(tmp_path, op, shapes):
    feeds = {f"x{k}": uniform(-3, 3, s, seed=k) for k, s in enumerate(shapes)}
    check(tmp_path, one_node(op, feeds), feeds)


def test_pow_broadcasts_a_computed_exponent(tmp_path):
    feeds = {"x": uniform(0.5, 2), "e": uniform(-2, 2, (5,))}
    check(tmp_path, one_node("Pow", feeds), feeds)


def test_activations_fuse_into_the_convolution(tmp_path):
    """A conv's elementwise followers (activations, a per-channel PRelu, a Max with a
    constant, a Pow by an integer constant) join its group and run in its packed layout."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Gelu", ["c"], ["g"]),
        helper.make_node("PRelu", ["g", "slope"], ["p"]),
        helper.make_node("Max", ["p", "floor"], ["m"]),
        helper.make_node("Mish", ["m"], ["h"]),
        helper.make_node("Pow", ["h", "two"], ["y"]),
    ]
    inits = {
        "w": rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2,
        "slope": rng.uniform(0, 0.5, (16, 1, 1)).astype(np.float32),
        "floor": np.float32(-0.05),
        "two": np.int64(2),
    }
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)
    data = model.SerializeToString()
    fused, _ = run_passes(import_onnx(data))
    ops = ["Conv", "Gelu", "PRelu", "Max", "Mish", "Pow"]
    assert [[n.op for n in g.nodes] for g in fused.groups] == [ops]
    lowered = lower_groups(fused)[0]  # packed: the input packed, the group, its output unpacked
    assert [[n.op for n in g.nodes] for g in lowered] == [["PackNCHWc"], ops, ["UnpackNCHWc"]]
    x = rng.standard_normal((1, 8, 10, 10)).astype(np.float32)
    check(tmp_path, data, {"x": x})


def test_activations_fuse_into_the_dense_layer(tmp_path):
    """A Gemm's elementwise followers run in its dense kernel: one lowered group."""
    x = uniform(-1, 1, (2, 16))
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
        helper.make_node("Erf", ["g"], ["e"]),
        helper.make_node("Softplus", ["e"], ["s"]),
        helper.make_node("Min", ["s", "cap"], ["y"]),
    ]
    inits = {"w": uniform(-1, 1, (8, 16)), "b": uniform(-1, 1, (8,)), "cap": np.float32(0.9)}
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    data = model.SerializeToString()
    groups = lower_groups(run_passes(import_onnx(data))[0])[0]
    assert [[n.op for n in g.nodes] for g in groups] == [["Dense", "Erf", "Softplus", "Min"]]
    check(tmp_path, data, {"x": x})


REDUCE = [
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
]  # fmt: skip


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize(
    "axes, keepdims, opset", [([1], 1, 18), ([-1, 0], 0, 18), (None, 1, 18), ([0, 2], 0, 13)]
)
def test_reduction(tmp_path, op, axes, keepdims, opset):
    _reduction(tmp_path, op, axes, keepdims, opset, {})


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("empty", [False, True])
def test_reduction_over_no_axes(tmp_path, op, empty):
    """noop_with_empty_axes=1 without axes (or an empty list) reduces nothing: the maps
    before and after the reduction (|x| for ReduceL1, x^2 for ReduceSumSquare) each element."""
    _reduction(tmp_path, op, [] if empty else None, 1, 18, {"noop_with_empty_axes": 1})


def _reduction(tmp_path, op, axes, keepdims, opset, more):
    """Every Reduce, its axes an input (opset 18) or an attribute (before; ReduceSum's an
    input from 13), or absent (all axes)."""
    x = uniform(0.5, 1.5) if op in ("ReduceProd", "ReduceLogSum") else NORMAL
    attrs, consts = {"keepdims": keepdims, **more}, {}
    if axes is not None and (opset >= 18 or op == "ReduceSum"):
        consts = {"axes": np.array(axes, np.int64)}
    elif axes is not None:
        attrs["axes"] = axes
    check(tmp_path, one_node(op, {"x": x}, attrs, consts, opset=opset), {"x": x})


@pytest.mark.parametrize(
    "attrs, with_bias", [({}, True), ({"axis": 1, "epsilon": 0.1}, True), ({"axis": -2}, False)]
)
def test_layer_normalization(tmp_path, attrs, with_bias):
    axis = attrs.get("axis", -1) % 3
    consts = {"scale": uniform(0.5, 2, NORMAL.shape[axis:], seed=1)}
    if with_bias:
        consts["bias"] = uniform(-1, 1, NORMAL.shape[axis:], seed=2)
    check(tmp_path, one_node("LayerNormalization", {"x": NORMAL}, attrs, consts), {"x": NORMAL})


@pytest.mark.parametrize("outputs", [("y", "mean"), ("y", "mean", "inv_std")])
def test_layer_normalization_statistics_outputs(tmp_path, outputs):
    model = one_node(
        "LayerNormalization", {"x": NORMAL}, {"axis": 1, "epsilon": 1e-3},
        consts={"s": uniform(1, 2, (4, 5))}, outputs=outputs,
    )  # fmt: skip
    check(tmp_path, model, {"x": NORMAL})


def test_instance_normalization(tmp_path):
    x = uniform(-2, 2, (2, 3, 4, 5))
    consts = {"scale": uniform(0.5, 2, (3,), seed=1), "bias": uniform(-1, 1, (3,), seed=2)}
    attrs = {"epsilon": 1e-3}
    check(tmp_path, one_node("InstanceNormalization", {"x": x}, attrs, consts), {"x": x})


@pytest.mark.parametrize("opset", [18, 21])
def test_group_normalization(tmp_path, opset):
    """Scale and bias per group at opset 18, per channel from 21."""
    x = uniform(-2, 2, (2, 6, 3, 4))
    per = 3 if opset == 18 else 6
    consts = {"scale": uniform(0.5, 2, (per,), seed=1), "bias": uniform(-1, 1, (per,), seed=2)}
    model = one_node("GroupNormalization", {"x": x}, {"num_groups": 3}, consts, opset=opset)
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [1, -1])
def test_cumsum(tmp_path, exclusive, reverse, axis):
    attrs = {"exclusive": exclusive, "reverse": reverse}
    model = one_node("CumSum", {"x": NORMAL}, attrs, {"axis": np.array(axis, np.int64)})
    check(tmp_path, model, {"x": NORMAL})


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 1, 1, 1), (4, 1), (2, 3, 1, 5)])
def test_expand(tmp_path, shape):
    x = uniform(-1, 1, (3, 1, 5))
    check(tmp_path, one_node("Expand", {"x": x}, consts={"s": np.array(shape, np.int64)}), {"x": x})


def test_tile(tmp_path):
    x = uniform(-1, 1, (2, 1, 3))
    check(tmp_path, one_node("Tile", {"x": x}, consts={"r": np.array([2, 3, 1])}), {"x": x})


def test_range_folds_into_a_constant(tmp_path):
    """Range of constants folds; its result feeds a computed node."""
    x = uniform(-1, 1, (7,))
    nodes = [
        helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
        helper.make_node("Add", ["x", "r"], ["y"]),
    ]
    inits = {"start": np.float32(1.5), "limit": np.float32(-2), "delta": np.float32(-0.5)}
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    assert [n.op for n in import_onnx(model).nodes] == ["Add"]
    check(tmp_path, model.SerializeToString(), {"x": x})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(tmp_path, mode):
    x = uniform(-1, 1, (2, 8, 3, 2))
    attrs = {"blocksize": 2, "mode": mode}
    check(tmp_path, one_node("DepthToSpace", {"x": x}, attrs), {"x": x})


def test_space_to_depth(tmp_path):
    x = uniform(-1, 1, (2, 3, 6, 4))
    check(tmp_path, one_node("SpaceToDepth", {"x": x}, {"blocksize": 2}), {"x": x})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize(
    "attrs", [{}, {"axis": -1, "keepdims": 0}, {"axis": 1, "select_last_index": 1}]
)
def test_arg_reduction(tmp_path, op, attrs):
    x = np.round(uniform(-2, 2)).astype(np.float32)  # ties: first or last index
    check(tmp_path, one_node(op, {"x": x}, attrs, out=np.int64), {"x": x})


def test_embedding_of_int64_token_ids(tmp_path):
    """Gather of a constant table by run-time int64 ids (negative ones count from the end)."""
    table = uniform(-1, 1, (10, 8))
    ids = np.array([[0, 3, 9, -1], [2, 2, -10, 5]], np.int64)
    model = _table_first(one_node("Gather", {"ids": ids}, consts={"table": table}))
    check(tmp_path, model, {"ids": ids})


def test_an_out_of_range_token_id_is_a_one_line_error(tmp_path):
    from compiler.errors import OperatorError
    from compiler.runtime.module import OutOfBoundsError

    table = uniform(-1, 1, (10, 8))
    ids = np.array([[0, 3], [10, 1]], np.int64)
    model = _table_first(one_node("Gather", {"ids": ids}, consts={"table": table}))
    (tmp_path / "m.onnx").write_bytes(model)
    graph = compile_model(tmp_path / "m.onnx")
    for bad in (10, -11, 2**40):
        ids[1, 0] = bad
        with pytest.raises(OutOfBoundsError, match=r"^graph run: .*out of range[^\n]*$"):
            graph.run({"ids": ids})
    ids[1, 0] = 9
    graph.run({"ids": ids})  # the error was reset
    with pytest.raises(OperatorError, match="Gather: index 10 is out of range for axis 0"):
        ids[1, 0] = 10
        reference.run(import_onnx(model), {"ids": ids})


def _table_first(model: bytes) -> bytes:
    """The one-node model with its node's inputs swapped (the initializer table first)."""
    import onnx

    m = onnx.load_from_string(model)
    m.graph.node[0].input[:] = list(reversed(m.graph.node[0].input))
    return m.SerializeToString()


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_by_run_time_indices(tmp_path, axis):
    """GatherElements of run-time data by run-time int64 indices (negative ones count from
    the end); one out of range is a one-line error on the CPU and the reference."""
    from compiler.errors import OperatorError
    from compiler.runtime.module import OutOfBoundsError

    x = uniform(-1, 1, (3, 4))
    n = x.shape[axis]
    i = np.random.default_rng(1).integers(-n, n, (2, 4) if axis == 0 else (3, 3))
    model = one_node("GatherElements", {"x": x, "i": i}, {"axis": axis})
    check(tmp_path, model, {"x": x, "i": i})
    graph = compile_model(tmp_path / "m.onnx")
    i[0, 0] = 4
    with pytest.raises(OutOfBoundsError, match=r"^graph run: .*out of range[^\n]*$"):
        graph.run({"x": x, "i": i})
    with pytest.raises(OperatorError, match="GatherElements: index 4 is out of range"):
        reference.run(import_onnx(model), {"x": x, "i": i})


def test_gather_of_computed_data_by_constant_indices(tmp_path):
    model = one_node("Gather", {"x": NORMAL}, {"axis": 2}, {"i": np.array([[4, 0], [-1, 2]])})
    check(tmp_path, model, {"x": NORMAL})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_arithmetic(tmp_path, op, dtype):
    feeds = {
        "a": np.arange(-6, 6, dtype=dtype).reshape(3, 4),
        "b": np.array([3, -2, 0, 7], dtype),
    }
    check(tmp_path, one_node(op, feeds, out=dtype), feeds)


COMPARE = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]


@pytest.mark.parametrize("op", COMPARE)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_comparison(tmp_path, op, dtype):
    feeds = {
        "a": np.round(uniform(-2, 2, (3, 4), seed=1)).astype(dtype),
        "b": np.round(uniform(-2, 2, (4,), seed=2)).astype(dtype),
    }
    check(tmp_path, one_node(op, feeds, out=np.bool_), feeds)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(tmp_path, op):
    rng = np.random.default_rng(0)
    feeds = {"a": rng.random((3, 4)) < 0.5, "b": rng.random((3, 1)) < 0.5}
    check(tmp_path, one_node(op, feeds, out=np.bool_), feeds)


def test_not(tmp_path):
    feeds = {"a": np.random.default_rng(0).random((3, 5)) < 0.5}
    check(tmp_path, one_node("Not", feeds, out=np.bool_), feeds)


SPECIAL = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.5], np.float32)


@pytest.mark.parametrize(
    "op, attrs",
    [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
     ("IsInf", {"detect_positive": 0}), ("IsInf", {"detect_positive": 0, "detect_negative": 0})],
)  # fmt: skip
def test_special_values(tmp_path, op, attrs):
    check(tmp_path, one_node(op, {"x": SPECIAL}, attrs, out=np.bool_), {"x": SPECIAL})


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_where_broadcasts(tmp_path, dtype):
    feeds = {
        "c": np.random.default_rng(0).random((3, 1, 5)) < 0.5,
        "a": np.round(uniform(-5, 5, (4, 5), seed=1)).astype(dtype),
        "b": np.round(uniform(-5, 5, (5,), seed=2)).astype(dtype),
    }
    check(tmp_path, one_node("Where", feeds, out=dtype), feeds)


@pytest.mark.parametrize(
    "source, to",
    [(np.float32, np.int64), (np.float32, np.int32), (np.float32, np.bool_),
     (np.int64, np.float32), (np.bool_, np.float32), (np.int64, np.bool_),
     (np.bool_, np.int64), (np.int32, np.int64)],
)  # fmt: skip
def test_cast(tmp_path, source, to):
    x = np.array([[-2.7, -1.0, 0.0, 0.4, 1.5, 3.9]], np.float32).astype(source)
    model = one_node(
        "Cast", {"x": x}, {"to": helper.np_dtype_to_tensor_dtype(np.dtype(to))}, out=to
    )
    check(tmp_path, model, {"x": x})


def test_a_masked_embedding_network(tmp_path):
    """int64 ids -> an embedding, a mask from comparing the ids, Where, a float head: every
    dtype on the way through one compiled graph."""
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"]),
        helper.make_node("Greater", ["ids", "zero"], ["mask"]),
        helper.make_node("Unsqueeze", ["mask", "last"], ["mask3"]),
        helper.make_node("Where", ["mask3", "emb", "fill"], ["masked"]),
        helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["maskf", "one"], ["count"], keepdims=0),
        helper.make_node("LayerNormalization", ["masked", "scale"], ["y"]),
        helper.make_node("ArgMax", ["y"], ["best"], axis=-1, keepdims=0),
    ]
    inits = {
        "table": uniform(-1, 1, (12, 6)), "zero": np.array(0, np.int64),
        "last": np.array([-1], np.int64), "fill": np.float32(0.0),
        "one": np.array([1], np.int64), "scale": uniform(0.5, 1.5, (6,)),
    }  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("best", TensorProto.INT64, None),
         helper.make_tensor_value_info("count", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    ids = np.array([[3, 0, 11, 0, 7], [1, 2, 0, 4, 5]], np.int64)
    check(tmp_path, model.SerializeToString(), {"ids": ids})


def test_a_dtype_the_cpu_does_not_run_is_listed(tmp_path):
    """Nodes on integers the CPU runs on float32 only (one a dense layer, whose kernel is
    float32), and a bfloat16 Cast, are refused in one error listing them."""
    from compiler.errors import OperatorError

    nodes = [
        helper.make_node("Relu", ["ids"], ["r"], name="relu_int"),
        helper.make_node("Cast", ["x"], ["d"], to=TensorProto.BFLOAT16, name="to_bfloat16"),
        helper.make_node("MatMul", ["rows", "w"], ["m"], name="matmul_int"),
    ]
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("rows", TensorProto.INT64, [2, 4])],
        [helper.make_tensor_value_info("r", TensorProto.INT64, None),
         helper.make_tensor_value_info("d", TensorProto.BFLOAT16, None),
         helper.make_tensor_value_info("m", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.ones((4, 3), np.int64), "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    with pytest.raises(OperatorError) as e:
        compile_model(tmp_path / "m.onnx")
    message = str(e.value)
    assert message.count("\n") == 0 and "3 group(s) cannot run on the CPU" in message
    assert "node matmul_int (MatMul): int64 tensors; the CPU runs MatMul on float32" in message
    assert (
        "node relu_int (Relu): int64 tensors; the CPU runs Relu on float32, float16, float64 "
        "only" in message
    )
    assert "node to_bfloat16 (Cast): bfloat16 tensors; the CPU runs float32, float16" in message


def test_a_transformer_encoder_layer(tmp_path):
    """int64 token ids through an embedding, an attention block with a padding mask (Equal,
    Where), LayerNormalization and a Gelu feed-forward block: one compiled graph (opset 20)
    against onnxruntime."""
    rng = np.random.default_rng(0)
    vocab, seq, dim, heads = 20, 6, 16, 2

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    def node(op, ins, out, **attrs):
        return helper.make_node(op, ins, [out], **attrs)

    head_shape = np.array([1, seq, heads, dim // heads], np.int64)
    nodes = [
        node("Gather", ["table", "ids"], "emb"),
        node("Add", ["emb", "pos"], "x0"),
        node("LayerNormalization", ["x0", "g0", "b0"], "x"),
        *[node("MatMul", ["x", f"w{k}"], k) for k in "qkv"],
        *[node("Reshape", [k, "heads"], f"{k}h") for k in "qkv"],
        node("Transpose", ["qh"], "qt", perm=[0, 2, 1, 3]),
        node("Transpose", ["kh"], "kt", perm=[0, 2, 3, 1]),
        node("Transpose", ["vh"], "vt", perm=[0, 2, 1, 3]),
        node("MatMul", ["qt", "kt"], "scores"),
        node("Div", ["scores", "root"], "scaled"),
        node("Equal", ["ids", "pad"], "is_pad"),
        node("Unsqueeze", ["is_pad", "mask_axes"], "mask"),
        node("Where", ["mask", "minus", "scaled"], "masked"),
        node("Softmax", ["masked"], "attn", axis=-1),
        node("MatMul", ["attn", "vt"], "ctx"),
        node("Transpose", ["ctx"], "ctxt", perm=[0, 2, 1, 3]),
        node("Reshape", ["ctxt", "flat"], "ctxf"),
        node("MatMul", ["ctxf", "wo"], "o"),
        node("Add", ["o", "x"], "r1"),
        node("LayerNormalization", ["r1", "g1", "b1"], "h"),
        node("MatMul", ["h", "w1"], "f1"),
        node("Gelu", ["f1"], "f2"),
        node("MatMul", ["f2", "w2"], "f3"),
        node("Add", ["f3", "h"], "r2"),
        node("LayerNormalization", ["r2", "g2", "b2"], "y"),
    ]
    inits = {
        "table": w(vocab, dim), "pos": w(seq, dim), "heads": head_shape,
        "root": np.float32(np.sqrt(dim // heads)), "pad": np.array(0, np.int64),
        "mask_axes": np.array([1, 2], np.int64), "minus": np.float32(-1e4),
        "flat": np.array([1, seq, dim], np.int64), "wo": w(dim, dim),
        "w1": w(dim, 2 * dim), "w2": w(2 * dim, dim),
        **{f"w{k}": w(dim, dim) for k in "qkv"},
        **{f"g{k}": 1 + w(dim) for k in range(3)}, **{f"b{k}": w(dim) for k in range(3)},
    }  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "encoder",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)
    ids = np.array([[5, 17, 3, 9, 0, 0]], np.int64)
    check(tmp_path, model.SerializeToString(), {"ids": ids})


def test_type_errors_are_listed_on_import():
    """Inputs of types ONNX does not allow the operator (a float condition, float logic, a
    float index) or of two types where it wants one are import errors, all in one line."""
    from compiler.errors import OperatorError

    nodes = [
        helper.make_node("Where", ["x", "x", "x"], ["w"], name="where"),
        helper.make_node("And", ["x", "x"], ["a"], name="and"),
        helper.make_node("Gather", ["x", "x"], ["g"], name="gather"),
        helper.make_node("Add", ["x", "ids"], ["s"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in "wags"],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    with pytest.raises(OperatorError) as e:
        import_onnx(model)
    message = str(e.value)
    assert message.startswith("4 node(s) cannot be imported") and "\n" not in message
    assert "node where (Where): input 0 (x) is float32; ONNX defines it as bool" in message
    assert "node and (And): input 0 (x) is float32; ONNX defines it as bool" in message
    assert (
        "node gather (Gather): input 1 (x) is float32; ONNX defines it as int32, int64" in message
    )
    assert "node add (Add): inputs 0 and 1 are float32 and int64; ONNX wants one type" in message


@pytest.mark.parametrize(
    "op, scale, message",
    [("InstanceNormalization", (4,), r"scale of shape \[4\] does not reshape to \[3, 1\]"),
     ("LayerNormalization", (2, 4, 5), r"scale or bias make the output \(2, 4, 5\)")],
)  # fmt: skip
def test_a_scale_that_does_not_fit_is_refused(op, scale, message):
    from compiler.errors import OperatorError

    x = uniform(-1, 1, (1, 3, 5)) if op == "InstanceNormalization" else uniform(-1, 1, (1, 4, 5))
    consts = {"scale": uniform(1, 2, scale), "bias": uniform(1, 2, scale)}
    with pytest.raises(OperatorError, match=message):
        import_onnx(one_node(op, {"x": x}, consts=consts))


@pytest.mark.parametrize("computed", [False, True])
def test_pow_takes_an_integer_exponent(tmp_path, computed):
    x, e = uniform(0.5, 2), np.array([2, 3, -1, 0, 1], np.int64)
    feeds = {"x": x, "e": e} if computed else {"x": x}
    check(tmp_path, one_node("Pow", feeds, consts={} if computed else {"e": e}), feeds)
