"""ONNX -> graph IR: defaults filled, constant inputs turned into attributes, shape-dependent
attributes resolved, shape arithmetic folded, symbolic inputs and unsupported nodes reported."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import OperatorError
from compiler.graph.onnx_import import import_onnx
from compiler.zoo import dqn, resnet18


def model(nodes, x_shape, outs, inits=(), opset=17, x_type=TensorProto.FLOAT):
    """A model of `nodes` reading input x; outs: {name: shape or None}."""
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", x_type, x_shape)],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in outs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_resnet18_imports_with_every_conv_attribute():
    g = import_onnx(resnet18())
    ops = [n.op for n in g.nodes]
    assert ops.count("Conv") == 20 and ops.count("BatchNormalization") == 20
    conv = g.nodes[0]
    assert conv.attrs == {
        "auto_pad": "NOTSET", "dilations": [1, 1], "group": 1, "kernel_shape": [7, 7],
        "pads": [3, 3, 3, 3], "strides": [2, 2],
    }  # fmt: skip
    assert g.value(conv.outputs[0]).shape == (1, 64, 112, 112)
    assert g.value(g.outputs[0]).shape == (1, 1000)


def test_auto_pad_same_becomes_explicit_asymmetric_pads():
    w = np.zeros((4, 3, 3, 3), np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["u"], auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Conv", ["x", "w"], ["l"], auto_pad="SAME_LOWER", strides=[2, 2]),
    ]
    g = import_onnx(model(nodes, [1, 3, 8, 8], {"u": None, "l": None}, {"w": w}))
    upper, lower = g.nodes
    assert upper.attrs["pads"] == [0, 0, 1, 1] and lower.attrs["pads"] == [1, 1, 0, 0]
    assert upper.attrs["auto_pad"] == "NOTSET" and g.value("u").shape == (1, 4, 4, 4)


def test_constant_inputs_become_attributes():
    i64 = np.int64
    nodes = [
        helper.make_node("Clip", ["x", "lo", ""], ["c"]),
        helper.make_node("Reshape", ["c", "shape"], ["r"]),
        helper.make_node("Slice", ["r", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Unsqueeze", ["s", "ax"], ["u"]),
        helper.make_node("Squeeze", ["u", "ax"], ["q"]),
        helper.make_node("Pad", ["q", "pads"], ["p"], mode="edge"),
        helper.make_node("ReduceSum", ["p", "ax"], ["y"], keepdims=0),
    ]
    inits = {
        "lo": np.array(0.5, np.float32), "shape": np.array([0, -1], i64),
        "starts": np.array([-3], i64), "ends": np.array([100], i64), "axes": np.array([1], i64),
        "ax": np.array([0], i64), "pads": np.array([0, 1, 0, 2], i64),
    }  # fmt: skip
    g = import_onnx(model(nodes, [2, 3, 4], {"y": None}, inits))
    a = {n.op: n.attrs for n in g.nodes}
    assert all(len(n.inputs) == 1 for n in g.nodes)
    assert a["Clip"] == {"min": 0.5, "max": np.inf}
    assert a["Reshape"]["shape"] == [2, 12]
    assert (a["Slice"]["starts"], a["Slice"]["ends"], a["Slice"]["steps"]) == ([9], [12], [1])
    assert a["Pad"] == {"mode": "edge", "pads": [0, 1, 0, 2], "value": 0.0}
    assert a["ReduceSum"]["axes"] == [0] and g.value("y").shape == (6,)


def test_opset_11_attributes_and_coerced_softmax():
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[1, 3]),
        helper.make_node("Squeeze", ["a"], ["s"], axes=[1]),
        helper.make_node("Softmax", ["b"], ["y"], axis=1),
    ]
    g = import_onnx(model(nodes, [2, 4, 5], {"s": None, "y": None}, opset=11))
    assert [n.op for n in g.nodes] == ["Split", "Squeeze", "Flatten", "Softmax", "Reshape"]
    assert g.nodes[0].attrs == {"axis": 1, "split": [1, 3]}
    assert g.value("y").shape == (2, 3, 5) and g.value("s").shape == (2, 5)


def test_shape_arithmetic_folds_into_a_reshape():
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Cast", ["target"], ["t64"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["x", "t64"], ["y"]),
    ]
    inits = {
        "zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
        "minus1": np.array([-1], np.int64),
    }  # fmt: skip
    g = import_onnx(model(nodes, [3, 4, 5], {"y": None}, inits))
    assert [n.op for n in g.nodes] == ["Reshape"] and g.nodes[0].attrs["shape"] == [3, 20]
    assert not g.constants  # the folded shape arithmetic is pruned


def test_symbolic_dimension_needs_a_shape():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    m = model(nodes, ["batch", 3], {"y": None})
    with pytest.raises(OperatorError, match=r"input x .*symbolic.*--shape x="):
        import_onnx(m)
    g = import_onnx(m, {"x": (2, 3)})
    assert g.value("y").shape == (2, 3)
    with pytest.raises(OperatorError, match="no input of that name"):
        import_onnx(m, {"z": (2, 3)})
    with pytest.raises(OperatorError, match="does not fit"):
        import_onnx(m, {"x": (2, 4)})


def test_every_unsupported_node_is_listed_in_one_error():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Gelu", ["a"], ["b"], name="gelu0"),
        helper.make_node(
            "Resize",
            ["a", "", "sc"],
            ["c"],
            name="rs",
            coordinate_transformation_mode="tf_crop_and_resize",
        ),
        helper.make_node("Pad", ["a", "pads"], ["d"], name="pad0"),
        helper.make_node("Gather", ["a", "far"], ["e"], name="g0"),
        helper.make_node("ReduceMax", ["a", "idx"], ["f"], name="rm"),
        helper.make_node("Add", ["c", "d"], ["y"]),
    ]
    inits = {
        "sc": np.ones(4, np.float32), "pads": -np.ones(8, np.int64), "idx": np.array([0]),
        "far": np.array([5]),
    }  # fmt: skip
    m = model(nodes, [1, 2, 4, 4], {"y": None, "e": None, "f": None}, inits, opset=20)
    with pytest.raises(OperatorError) as e:
        import_onnx(m)
    # opset 20: Resize and Pad as redefined at 19 import, their bad values are listed
    assert "node rs (Resize): roi None: a start and an end per axis of [0, 1, 2, 3]" in str(e.value)
    assert "node pad0 (Pad): negative pads" in str(e.value)
    assert "rm (ReduceMax)" not in str(e.value)  # redefined at 20 for more element types
    m.opset_import[0].version = 17
    with pytest.raises(OperatorError) as e:
        import_onnx(m)
    msg = str(e.value)
    assert msg.startswith("5 node(s) cannot be imported:")
    assert "node rm (ReduceMax): 2 inputs; at opset 17 it takes 1-1" in msg
    assert "node gelu0 (Gelu): operator not defined at opset 17" in msg
    assert "node rs (Resize): roi None: a start and an end per axis" in msg
    assert "node pad0 (Pad): negative pads" in msg
    assert "node g0 (Gather): indices [5] are out of range for an axis of 1" in msg


def test_dqn_imports_and_prints():
    text = str(import_onnx(dqn()))
    assert "Gemm(%flatten_13, %fc_w_14, %fc_b_15) {alpha=1, beta=1, transA=0, transB=1}" in text


f = np.float32
BAD = {
    "attribute type": (
        [helper.make_node("Flatten", ["x"], ["y"], axis=[1])], [2, 3], {},
        "attribute axis is INTS, ONNX defines it as INT",
    ),
    "zero stride": (
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 1])],
        [1, 1, 4, 4], {}, "attribute strides=[0, 1]: 2 values >= 1 expected",
    ),
    "batch norm statistics": (
        [helper.make_node("BatchNormalization", ["x", "s", "s", "s", "s"], ["y"])],
        [1, 2, 3, 3], {"s": np.ones(3, f)}, "scale, bias, mean and var",
    ),
    "conv groups": (
        [helper.make_node("Conv", ["x", "w"], ["y"], group=2)],
        [1, 4, 3, 3], {"w": np.ones((3, 2, 1, 1), f)}, "with group 2 do not fit",
    ),
    "repeated axes": (
        [helper.make_node("Unsqueeze", ["x", "a"], ["y"])],
        [2], {"a": np.array([0, -3])}, "repeat an axis",
    ),
    "window in the padding": (  # onnxruntime refuses it too
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[2, 0, 0, 0])],
        [1, 1, 4, 4], {}, "the [2, 2] window of output index 0 along spatial axis 0 lies wholly in",
    ),
    "dilated window between the input's rows": (  # found by tests/robust/test_onnx_fuzz.py
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 1], dilations=[2, 1],
                          auto_pad="SAME_UPPER")],
        [1, 1, 1, 1], {}, "dilations [2, 1]: the [2, 1] window of output index 0 along spatial",
    ),
    "resize to nothing": (
        [helper.make_node("Resize", ["x", "", "sc"], ["y"])],
        [1, 1, 2, 2], {"sc": np.array([1, 1, 0, 1], f)}, "not positive",
    ),
    "empty LRN window": (
        [helper.make_node("LRN", ["x"], ["y"], size=0)],
        [1, 4, 3, 3], {}, "size=0: the window must hold at least one channel",
    ),
    "LRN without spatial axes": (
        [helper.make_node("LRN", ["x"], ["y"], size=3)],
        [2, 4], {}, "the input must have a batch, a channel and a spatial axis",
    ),
    "global pool of a vector": (  # found by tests/robust/test_onnx_fuzz.py
        [helper.make_node("GlobalAveragePool", ["x"], ["y"])],
        [1], {}, "input 0 (x) has rank 1; 4 expected",
    ),
    "reflect past a one-wide axis": (  # found by the fuzzer: the CPU kernel read outside x
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")],
        [1, 1, 1, 1], {"p": np.array([0] * 7 + [1])},
        "mode reflect: pads [0, 0, 0, 0, 0, 0, 0, 1] reach past axis 3 of size 1",
    ),
    "conv of a 4-d volume": (
        [helper.make_node("Conv", ["x", "w"], ["y"])],
        [1, 2, 3, 3, 3, 3], {"w": np.ones((3, 2, 1, 1, 1, 1), f)},
        "input 0 (x) has rank 6; 4 or 5 expected",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_invalid_nodes_are_one_line_errors(case):
    nodes, shape, inits, message = BAD[case]
    with pytest.raises(OperatorError, match="1 node\\(s\\) cannot be imported") as e:
        import_onnx(model(nodes, shape, {"y": None}, inits))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_newer_redefinitions_import_unless_the_node_sets_their_new_attributes():
    pool = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], name="ap")
    m = model([pool], [1, 2, 4, 4], {"y": None}, {}, opset=22)
    assert import_onnx(m).value("y").shape == (1, 2, 3, 3)
    pool.attribute.append(helper.make_attribute("dilations", [2, 2]))  # defined at 19, taken
    m = model([pool], [1, 2, 4, 4], {"y": None}, {}, opset=22)
    assert import_onnx(m).value("y").shape == (1, 2, 2, 2)
    cast = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN, saturate=0)
    m = model([cast], [1, 2, 4, 4], {"y": None}, {}, opset=21)
    with pytest.raises(OperatorError, match="Cast to float8_e4m3fn \\(it sets saturate\\): "):
        import_onnx(m)


def test_a_sequence_or_optional_input_is_refused_in_one_line():
    """The graph's values are tensors: a sequence or an optional graph input is named."""
    seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [2])
    opt = helper.make_value_info("x", helper.make_optional_type_proto(seq.type))
    for inp, what in ((seq, "a sequence of tensors"), (opt, "an optional value")):
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "m", [inp],
                                  [helper.make_value_info("y", inp.type)])  # fmt: skip
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        with pytest.raises(OperatorError, match=f"input x is {what}: the graph's values are "):
            import_onnx(m)
