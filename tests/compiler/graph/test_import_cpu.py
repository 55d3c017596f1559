"""ONNX models through the graph IR and its passes onto the CPU: operators beyond the
benchmark networks compile and match onnxruntime; what the CPU cannot run is listed."""

import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import OperatorError
from compiler.graph.build_onnx import compile_model
from vta.cli import main

ort = pytest.importorskip("onnxruntime")
rng = np.random.default_rng(0)


def save(tmp_path, nodes, x_shape, y_shape, consts, name="m.onnx"):
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / name
    path.write_bytes(m.SerializeToString())
    return path


def check(path, x_shape):
    x = rng.standard_normal(x_shape).astype(np.float32)
    (got,) = compile_model(path).run({"x": x}).values()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())


def f32(*shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def test_conv_network_with_more_operators(tmp_path):
    c = 16
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 0, 1, 2]),
        helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["n1"]),
        helper.make_node("HardSwish", ["n1"], ["h"]),
        helper.make_node(
            "MaxPool", ["h"], ["p"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1
        ),  # fmt: skip
        helper.make_node("Conv", ["p", "wd"], ["d"], kernel_shape=[3, 3], pads=[1] * 4, group=c),
        helper.make_node("LeakyRelu", ["d"], ["l"], alpha=0.1),
        helper.make_node("Mul", ["l", "scale"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["g1"], alpha=0.5),
        helper.make_node("Softmax", ["g1"], ["y"]),
    ]
    consts = {
        "w1": f32(c, 8, 3, 3), "g": f32(c) + 1, "b": f32(c), "m": f32(c), "v": f32(c) ** 2 + 0.5,
        "wd": f32(c, 1, 3, 3), "scale": f32(1, c, 1, 1), "fc": f32(c, 10), "fcb": f32(10),
    }  # fmt: skip
    check(save(tmp_path, nodes, [1, 8, 12, 12], [1, 10], consts), (1, 8, 12, 12))


def test_plain_layout_operators(tmp_path):
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Concat", ["r", "r"], ["cat"], axis=1),
        helper.make_node("MatMul", ["cat", "w"], ["mm"]),
        helper.make_node("Sigmoid", ["mm"], ["sg"]),
        helper.make_node("Sub", ["sg", "half"], ["y"]),
    ]
    consts = {"shape": np.array([6, -1], np.int64), "w": f32(8, 5), "half": np.float32(0.5)}
    check(save(tmp_path, nodes, [3, 4, 2], [6, 5], consts), (3, 4, 2))


def test_batch_norm_with_computed_parameters(tmp_path):
    """A batch norm whose statistics are computed stays one (no folding) and runs."""
    nodes = [
        helper.make_node("Mul", ["s", "s"], ["v"]),
        helper.make_node("BatchNormalization", ["x", "s", "s", "s", "v"], ["y"], epsilon=0.5),
    ]
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    feeds = {"x": f32(1, 4, 3, 3, scale=1), "s": f32(4, scale=1)}
    (got,) = compile_model(tmp_path / "m.onnx").run(feeds).values()
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, sess.run(None, feeds)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "dtype, message",
    [(TensorProto.INT32, "node y (Relu): int32 tensors; the CPU runs Relu on float32, float16, "
                         "float64 only"),
     (TensorProto.BFLOAT16, "inputs x: the CPU graph runs float32, float16, float64, int64, ")],
)  # fmt: skip
def test_inputs_of_other_dtypes_reach_only_operators_that_take_them(tmp_path, dtype, message):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "m",
        [helper.make_tensor_value_info("x", dtype, [2])],
        [helper.make_tensor_value_info("y", dtype, [2])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    with pytest.raises(OperatorError, match=re.escape(message)):
        compile_model(tmp_path / "m.onnx")


def test_vta_compile_prints_passes(tmp_path, capsys):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Identity", ["r"], ["y"])]
    path = save(tmp_path, nodes, [2, 3], [2, 3], {})
    assert main(["compile", str(path), "-o", str(tmp_path / "c"), "--print-passes"]) == 0
    out = capsys.readouterr().out
    assert out.index("== import ==") < out.index("== simplify ==") < out.index("== fuse ==")
    assert "%y = Relu(%x) : float32[2,3]" in out.split("== simplify ==")[1]
    assert "1 tasks in 1 groups" in out
    assert "== layout (NCHW[x]c) ==\ngroup y:\n  %y[2,3] = Relu(%x[2,3])" in out
    assert "== memory plan ==" in out and "arena 0 bytes, lower bound 0 bytes" in out


def test_two_inputs_and_an_output_read_by_a_later_layer(tmp_path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
        helper.make_node("Add", ["c", "b"], ["s"]),
        helper.make_node("Relu", ["s"], ["y1"]),
        helper.make_node("Conv", ["y1", "w2"], ["y2"], pads=[1] * 4),
    ]
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, s)
         for k, s in (("x", [1, 4, 6, 6]), ("b", [1, 8, 6, 6]))],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in ("y1", "y2")],
        [numpy_helper.from_array(f32(8, 4, 3, 3), "w"),
         numpy_helper.from_array(f32(8, 8, 3, 3), "w2")],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    feeds = {"x": f32(1, 4, 6, 6, scale=1), "b": f32(1, 8, 6, 6, scale=1)}
    got = compile_model(tmp_path / "m.onnx").run(feeds)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for name, want in zip(("y1", "y2"), sess.run(None, feeds), strict=True):
        np.testing.assert_allclose(got[name], want, rtol=1e-3, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("shared", [True, False])
def test_squeeze_excitation_gate(tmp_path, shared):
    """A per-channel gate multiplies a conv's output: fused into that conv's group (packed)
    when the output has no other reader, a group of its own when the gate reads it too."""
    c = 32
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["f"], pads=[1] * 4),
        helper.make_node("Conv", ["x", "w"], ["g"], pads=[1] * 4),
        helper.make_node("GlobalAveragePool", ["f" if shared else "g"], ["p"]),
        helper.make_node("Conv", ["p", "w1"], ["q"]),
        helper.make_node("Relu", ["q"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["e"]),
        helper.make_node("HardSigmoid", ["e"], ["gate"]),
        helper.make_node("Mul", ["f", "gate"], ["y"]),
    ]
    consts = {"w": f32(c, 8, 3, 3), "w1": f32(8, c, 1, 1), "w2": f32(c, 8, 1, 1)}
    check(save(tmp_path, nodes, [1, 8, 6, 6], [1, c, 6, 6], consts), (1, 8, 6, 6))


def test_slice_pad_split_and_reductions(tmp_path):
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
        helper.make_node("Slice", ["c", "st", "en", "ax", "sp"], ["s"]),
        helper.make_node("Pad", ["s", "p1"], ["pr"], mode="reflect"),
        helper.make_node("Pad", ["pr", "p2"], ["pe"], mode="edge"),
        helper.make_node("Pad", ["pe", "p3", "v"], ["pc"]),
        helper.make_node("Split", ["pc", "sz"], ["a", "b"], axis=1),
        helper.make_node("ReduceMean", ["a"], ["m"], axes=[1, 2, 3]),
        helper.make_node("ReduceMax", ["b"], ["mx"], axes=[1, -2, -1]),
        helper.make_node("Add", ["m", "mx"], ["t"]),
        helper.make_node("ReduceSum", ["t", "r2"], ["y"], keepdims=0),
    ]
    consts = {
        "w": f32(16, 4, 3, 3), "st": i64(-1, 1), "en": i64(-100, 8), "ax": i64(3, 2),
        "sp": i64(-2, 2), "p1": i64(0, 0, 1, 2, 0, 0, 2, 1), "p2": i64(0, 0, 1, 0, 0, 0, 0, 3),
        "p3": i64(0, 1, 0, 0, 0, 2, 0, 1), "v": np.float32(0.5), "sz": i64(7, 12),
        "r2": i64(1, -1),
    }  # fmt: skip
    check(save(tmp_path, nodes, [1, 4, 9, 8], [1, 1], consts), (1, 4, 9, 8))


@pytest.mark.parametrize("op, axis", [("LogSoftmax", 1), ("LogSoftmax", -1), ("Softmax", 0)])
def test_softmax_kinds(tmp_path, op, axis):
    nodes = [helper.make_node(op, ["x"], ["y"], axis=axis)]
    check(save(tmp_path, nodes, [3, 5, 8], [3, 5, 8], {}), (3, 5, 8))


def test_generic_matmuls(tmp_path):
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["x", "t"], ["g"]),  # [2, 3, 4] x [2, 4, 3] (batched)
        helper.make_node("MatMul", ["g", "w"], ["h"]),  # [2, 3, 3] x [1, 3, 5] (broadcast)
        helper.make_node("MatMul", ["h", "v"], ["hv"]),  # x a vector: [2, 3]
        helper.make_node("Gemm", ["hv", "hv", "c"], ["y"], transA=1, alpha=0.5, beta=2.0),
    ]
    consts = {"w": f32(1, 3, 5), "v": f32(5), "c": f32(3, 3)}
    check(save(tmp_path, nodes, [2, 3, 4], [3, 3], consts), (2, 3, 4))


RESIZES = {
    "nearest_asym_floor": (dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                nearest_mode="floor"), [1, 1, 2, 1.5]),
    "nearest_half_pixel": (dict(mode="nearest"), [1, 1, 2.5, 3]),
    "nearest_ceil": (dict(mode="nearest", nearest_mode="ceil"), [1, 1, 0.5, 2]),
    "nearest_prefer_ceil": (dict(mode="nearest", nearest_mode="round_prefer_ceil",
                                 coordinate_transformation_mode="tf_half_pixel_for_nn"),
                            [1, 1, 2, 2]),
    "linear_half_pixel": (dict(mode="linear"), [1, 1, 2, 1.5]),
    "linear_align_corners": (dict(mode="linear", coordinate_transformation_mode="align_corners"),
                             [1, 1, 1.5, 2]),
    "linear_pytorch": (dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
                       [1, 1, 0.5, 2]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(RESIZES))
def test_resize(tmp_path, case):
    attrs, scales = RESIZES[case]
    nodes = [helper.make_node("Resize", ["x", "", "sc"], ["y"], **attrs)]
    path = save(tmp_path, nodes, [1, 3, 6, 5], None, {"sc": np.array(scales, np.float32)})
    check(path, (1, 3, 6, 5))


@pytest.mark.parametrize(
    "attrs, roi, sizes",
    [(dict(mode="linear"), [0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8], [1, 3, 3, 4]),
     (dict(mode="linear", extrapolation_value=10.0), [0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7],
      [1, 3, 3, 3]),
     (dict(mode="nearest", axes=[3, 2]), [0.5, -0.2, 0.9, 0.6], [1, 5]),
     (dict(mode="cubic", axes=[2]), [0.25, 0.75], [4])],
)  # fmt: skip
def test_resize_tf_crop_and_resize(tmp_path, attrs, roi, sizes):
    """The crop (start and end per axis, as fractions of the input's length - 1), positions
    outside the input the extrapolation value."""
    from testkit.onnx_models import check as check_model
    from testkit.onnx_models import one_node

    attrs = dict(coordinate_transformation_mode="tf_crop_and_resize", **attrs)
    consts = {"roi": np.array(roi, np.float32), "scales": None,
              "sizes": np.array(sizes, np.int64)}  # fmt: skip
    x = f32(1, 3, 6, 5, scale=1.0)
    check_model(tmp_path, one_node("Resize", {"x": x}, attrs, consts), {"x": x})


@pytest.mark.parametrize(
    "attrs, scales, sizes",
    [(dict(mode="linear"), [1, 1, 0.6, 0.4], None),
     (dict(mode="cubic"), None, [1, 3, 3, 2]),
     (dict(mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5), [1, 1, 0.5, 0.75], None),
     (dict(mode="linear", coordinate_transformation_mode="align_corners"), [1, 1, 0.7, 1.6],
      None),
     (dict(mode="linear", axes=[3]), None, [2])],
)  # fmt: skip
def test_resize_antialias(tmp_path, attrs, scales, sizes):
    """Downsampling with the filter widened by 1 / scale (a product by a constant matrix per
    axis); an upsampled axis as without antialias. Against the onnx package's reference
    (onnxruntime's align_corners differs from it)."""
    from onnx.reference import ReferenceEvaluator

    from compiler.graph import reference
    from compiler.graph.onnx_import import import_onnx
    from testkit.onnx_models import one_node

    consts = {"roi": None, "scales": None if scales is None else np.array(scales, np.float32),
              "sizes": None if sizes is None else np.array(sizes, np.int64)}  # fmt: skip
    x = f32(1, 3, 6, 5, scale=1.0)
    model = one_node("Resize", {"x": x}, dict(antialias=1, **attrs), consts)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (tmp_path / "m.onnx").write_bytes(model)
    for got in (reference.run(import_onnx(model), {"x": x}),
                compile_model(tmp_path / "m.onnx").run({"x": x})):  # fmt: skip
        np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "attrs, bias",
    [
        (dict(strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0], group=2), True),
        (dict(strides=[1, 2], dilations=[2, 1]), False),
        (dict(strides=[2, 2], output_shape=[10, 9]), True),
    ],
)
def test_conv_transpose(tmp_path, attrs, bias):
    ins = ["x", "w", "b"] if bias else ["x", "w"]
    nodes = [helper.make_node("ConvTranspose", ins, ["t"], **attrs),
             helper.make_node("Relu", ["t"], ["y"])]  # fmt: skip
    consts = {"w": f32(4, 3, 3, 3), **({"b": f32(3 * attrs.get("group", 1))} if bias else {})}
    check(save(tmp_path, nodes, [1, 4, 5, 4], None, consts), (1, 4, 5, 4))


def test_empty_tensors_flow_through_and_0_d_ones_run(tmp_path):
    """A value with no elements is known (a constant): no kernel computes it, a concat
    drops it, an output of it is empty in its dtype."""
    nodes = [helper.make_node("Slice", ["x", "st", "en"], ["e"]),
             helper.make_node("Concat", ["x", "e"], ["c"], axis=0),
             helper.make_node("Exp", ["c"], ["y"]), helper.make_node("Shape", ["e"], ["s"]),
             helper.make_node("Slice", ["s", "st", "en"], ["z"])]  # fmt: skip
    consts = {"st": np.array([2], np.int64), "en": np.array([1], np.int64)}
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(t, k, None) for t, k in (("y", 1), ("z", 7))],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )  # fmt: skip
    (tmp_path / "m.onnx").write_bytes(helper.make_model(graph).SerializeToString())
    x = np.float32([0.5, 1, 2, 3])
    got = compile_model(tmp_path / "m.onnx").run({"x": x})
    np.testing.assert_allclose(got["y"], np.exp(x), rtol=1e-6)
    assert got["z"].shape == (0,) and got["z"].dtype == np.int64
    nodes = [helper.make_node("Squeeze", ["x"], ["s"]), helper.make_node("Exp", ["s"], ["y"])]
    got = compile_model(save(tmp_path, nodes, [1], None, {})).run({"x": np.float32([0.5])})["y"]
    assert got.shape == () and np.isclose(got, np.exp(0.5))


def test_channel_concat_and_its_batch_norm_stay_packed(tmp_path):
    from compiler.codegen.target import target_scope
    from compiler.graph.build_onnx import import_groups

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1] * 4),
        helper.make_node("Conv", ["x", "w2"], ["b"]),
        helper.make_node("Concat", ["a", "b", "x"], ["c"], axis=1),
        helper.make_node("BatchNormalization", ["c", "g", "be", "m", "v"], ["n"]),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("Conv", ["r", "w3"], ["d"]),
        helper.make_node("Add", ["d", "d"], ["y"]),
    ]
    c = 96
    consts = {
        "w1": f32(32, 32, 3, 3), "w2": f32(32, 32, 1, 1), "g": f32(c) + 1, "be": f32(c),
        "m": f32(c), "v": f32(c) ** 2 + 0.5, "w3": f32(32, c, 1, 1),
    }  # fmt: skip
    path = save(tmp_path, nodes, [1, 32, 5, 5], None, consts)
    with target_scope("llvm"):
        groups = import_groups(path)[0]
    ops = [[n.op for n in g.nodes] for g in groups]
    assert ["Concat", "Mul", "Add", "Relu"] in ops and ["Conv", "Add"] in ops
    assert [op for g in ops for op in g].count("UnpackNCHWc") == 1  # at the output only
    check(path, (1, 32, 5, 5))


def test_spatial_operators_stay_packed(tmp_path):
    from compiler.codegen.target import target_scope
    from compiler.graph.build_onnx import import_groups

    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
        helper.make_node("Resize", ["c", "", "sc"], ["r"], mode="linear"),
        helper.make_node("Pad", ["r", "p"], ["pd"], mode="reflect"),
        helper.make_node("Slice", ["pd", "st", "en", "ax"], ["s"]),
        helper.make_node("Relu", ["s"], ["sr"]),
        helper.make_node("Conv", ["sr", "w2"], ["y"]),
    ]
    consts = {
        "w": f32(32, 8, 3, 3), "sc": np.array([1, 1, 2, 1.5], np.float32),
        "p": i64(0, 0, 1, 2, 0, 0, 2, 1), "st": i64(1, -5), "en": i64(100, -1),
        "ax": i64(2, 3), "w2": f32(16, 32, 1, 1),
    }  # fmt: skip
    path = save(tmp_path, nodes, [1, 8, 5, 6], None, consts)
    with target_scope("llvm"):
        groups = import_groups(path)[0]
    ops = [op for g in groups for op in (n.op for n in g.nodes)]
    assert ops.count("UnpackNCHWc") == 1 and ops.count("PackNCHWc") == 1
    check(path, (1, 8, 5, 6))


def test_followers_that_do_not_pack_get_a_group_of_their_own(tmp_path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Add", ["r", "hw"], ["a"]),  # a [H, W] constant: not per channel
        helper.make_node("Sigmoid", ["a"], ["y"]),
    ]
    consts = {"w": f32(16, 8, 3, 3), "hw": f32(5, 6)}
    check(save(tmp_path, nodes, [1, 8, 5, 6], None, consts), (1, 8, 5, 6))


@pytest.mark.parametrize("other_reader", ["MatMul", "Relu"])
def test_flatten_into_dense_layers_reads_the_packed_layout(tmp_path, other_reader):
    """A flatten of a packed conv output that only dense layers read is a view of the packed
    tensor (no kernel; the dense weights' columns permuted); another kind of reader needs the
    plain layout, so it is unpacked."""
    from compiler.codegen.target import target_scope
    from compiler.graph.build import view_aliases
    from compiler.graph.build_onnx import import_groups

    second = (
        helper.make_node("MatMul", ["f", "wm"], ["g2"])
        if other_reader == "MatMul"
        else helper.make_node("Relu", ["f"], ["r2"])
    )
    tail = (
        []
        if other_reader == "MatMul"
        else [helper.make_node("Gemm", ["r2", "wf"], ["g2"], transB=1)]
    )
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["g1"], transB=1),
        second,
        *tail,
        helper.make_node("Add", ["g1", "g2"], ["y"]),
    ]
    k = 32 * 5 * 6
    consts = {"w": f32(32, 8, 3, 3), "wf": f32(10, k, scale=0.05), "bf": f32(10), "wm": f32(k, 10)}
    path = save(tmp_path, nodes, [1, 8, 5, 6], None, consts)
    with target_scope("llvm"):
        groups, _, _, _, outputs = import_groups(path)
    ops = [op for g in groups for op in (n.op for n in g.nodes)]
    views = view_aliases(groups, set(outputs))
    if other_reader == "MatMul":
        assert "UnpackNCHWc" not in ops and views == {"f": "r_nchwc"}
    else:
        assert ops.count("UnpackNCHWc") == 1 and views == {}
    check(path, (1, 8, 5, 6))
