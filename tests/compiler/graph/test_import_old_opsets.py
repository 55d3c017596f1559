"""Models of opsets 1-10 are upgraded to opset 13 (onnx.version_converter) as they import, and
the compile log says so; the upgraded model matches onnxruntime on the original one, through
the reference executor and compiled for the CPU."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import OperatorError
from compiler.graph import reference
from compiler.graph.build_onnx import compile_model
from compiler.graph.onnx_import import import_onnx

ort = pytest.importorskip("onnxruntime")
rng = np.random.default_rng(0)


def f32(*shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def save(tmp_path, nodes, x_shape, y_shape, consts, opset, ir_version=5):
    graph = helper.make_graph(
        nodes,
        "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version
    )
    path = tmp_path / f"opset{opset}.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def check(path, x_shape):
    """The model's output from the reference executor and the compiled CPU graph against
    onnxruntime's on the model as saved (its old opset); the log's upgrade line."""
    x = rng.standard_normal(x_shape).astype(np.float32)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    logged: list[str] = []
    graph = import_onnx(path, log=logged.append)
    (ref,) = reference.run(graph, {"x": x}).values()
    np.testing.assert_allclose(ref, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    (got,) = compile_model(path, log=logged.append).run({"x": x}).values()
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
    return logged


def conv_network(c=8):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"]),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Dropout", ["p"], ["d"], ratio=0.25),
        helper.make_node("Flatten", ["d"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    consts = {
        "w": f32(c, 3, 3, 3), "g": f32(c) + 1, "b": f32(c), "m": f32(c), "v": f32(c) ** 2 + 0.5,
        "fc": f32(10, c * 4 * 4), "fcb": f32(10),
    }  # fmt: skip
    return nodes, consts


@pytest.mark.parametrize("opset, ir_version", [(7, 3), (9, 4), (10, 5)])
def test_conv_batchnorm_pool_dropout_gemm(tmp_path, opset, ir_version):
    """At IR version 3 the initializers are not listed as graph inputs."""
    nodes, consts = conv_network()
    path = save(tmp_path, nodes, [1, 3, 8, 8], [1, 10], consts, opset, ir_version)
    logged = check(path, [1, 3, 8, 8])
    line = f"upgraded the model from ONNX opset {opset} to 13 (onnx.version_converter)"
    assert [m for m in logged if "opset" in m] == [line, line]
    assert [n.op for n in import_onnx(path).nodes] == ["Conv", "BatchNormalization", "Relu",
        "MaxPool", "Dropout", "Flatten", "Gemm"]  # fmt: skip


def test_upsample_at_opset_9_becomes_resize(tmp_path):
    nodes = [
        helper.make_node("Upsample", ["x", "scales"], ["u"], mode="nearest"),
        helper.make_node("Relu", ["u"], ["y"]),
    ]
    consts = {"scales": np.array([1, 1, 2, 2], np.float32)}
    path = save(tmp_path, nodes, [1, 2, 3, 4], [1, 2, 6, 8], consts, 9)
    check(path, [1, 2, 3, 4])
    assert [n.op for n in import_onnx(path).nodes] == ["Resize", "Relu"]


def test_softmax_before_13_keeps_its_coerced_meaning(tmp_path):
    nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=1)]
    check(save(tmp_path, nodes, [2, 3, 4], [2, 3, 4], {}, 10), [2, 3, 4])


def test_opsets_below_7_upgrade_and_opset_0_is_a_one_line_error(tmp_path):
    # onnxruntime runs opset 7 and later only: the models of opsets 1 and 6 against numpy
    x = f32(2, 3, 4)
    for opset, nodes in [(1, [helper.make_node("Relu", ["x"], ["y"], consumed_inputs=[0])]),
                         (6, [helper.make_node("Abs", ["x"], ["u"]),
                              helper.make_node("Neg", ["u"], ["y"])])]:  # fmt: skip
        path = save(tmp_path, nodes, [2, 3, 4], [2, 3, 4], {}, opset)
        want = np.maximum(x, 0) if opset == 1 else -np.abs(x)
        np.testing.assert_array_equal(reference.run(import_onnx(path), {"x": x})["y"], want)
        np.testing.assert_array_equal(compile_model(path).run({"x": x})["y"], want)
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    with pytest.raises(OperatorError, match=r"ONNX opset 0; supported are 1 and later"):
        import_onnx(save(tmp_path, nodes, [1, 4], [1, 4], {}, 0))
    # a node the version converter cannot upgrade: its message in the one line
    bad = [helper.make_node("Upsample", ["x"], ["y"], mode="nearest")]  # no scales
    with pytest.raises(OperatorError, match=r"opset 7 cannot be upgraded to 13: .*'scales'") as e:
        import_onnx(save(tmp_path, bad, [1, 4], [1, 8], {}, 7))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("x_shape", [(2, 3, 4), (2, 3, 3, 3), (1, 3, 2, 2, 3)])
def test_prelu_before_7_has_a_slope_per_channel(tmp_path, x_shape):
    """A slope of one value per channel (axis 1), whatever the input's last axis (opset 7
    would align it with that axis); a slope of one value is shared."""
    x = f32(*x_shape, scale=1.0)
    for slope in (f32(3, scale=1.0), np.float32([0.25])):
        nodes = [helper.make_node("PRelu", ["x", "s"], ["y"])]
        path = save(tmp_path, nodes, list(x_shape), list(x_shape), {"s": slope}, 6)
        per_axis = slope.reshape(-1, *[1] * (len(x_shape) - 2))
        want = np.where(x < 0, x * per_axis, x)
        np.testing.assert_array_equal(reference.run(import_onnx(path), {"x": x})["y"], want)
        np.testing.assert_allclose(compile_model(path).run({"x": x})["y"], want, rtol=1e-6)
