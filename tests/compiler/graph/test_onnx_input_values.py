"""Models that read graph inputs as constants (Reduce axes, Slice bounds, Clip bounds, Resize
scales given as inputs): the graph exists for given values of them, so `vta run` compiles it
for the run's (`cpu_api.load_model` with `inputs`, binding what each import finds it reads),
matching onnxruntime; without the values the model is refused in one line naming them. Also
what the onnx package's test models showed besides: Resize's align_corners on a scale that
does not divide, Cast's saturate on targets it does not apply to, inputs with no elements
(known values: what reads them folds)."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.errors import OperatorError
from compiler.graph.build_onnx import compile_model
from compiler.graph.cpu_api import load_model
from compiler.graph.onnx_import import InputValuesNeeded, import_onnx
from vta.cli import main

ort = pytest.importorskip("onnxruntime")

from testkit.onnx_models import one_node, reference_outputs  # noqa: E402

X = np.random.default_rng(0).uniform(-2, 2, (2, 3, 4, 5)).astype(np.float32)


def run_as_vta_run(tmp_path, model: bytes, feeds: dict) -> None:
    """The model compiled for the run's inputs, its outputs against onnxruntime."""
    (tmp_path / "m.onnx").write_bytes(model)
    module = load_model(tmp_path / "m.onnx", inputs=feeds)
    bound = module.manifest.get("bound_inputs", [])
    got = module.run({k: v for k, v in feeds.items() if k not in bound})
    for value, want in zip(got.values(), reference_outputs(model, feeds), strict=True):
        assert value.shape == want.shape and value.dtype == want.dtype
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "op, feeds, attrs",
    [("ReduceSum", {"axes": np.array([1, -1])}, {"keepdims": 0}),
     ("ReduceMax", {"axes": np.array([2])}, {}),
     ("ReduceMean", {"axes": np.array([3, 0])}, {}),
     ("Slice", {"starts": np.array([1, 0]), "ends": np.array([3, -1]),
                "axes": np.array([2, 3]), "steps": np.array([1, 2])}, {}),
     ("Clip", {"lo": np.array(-1, np.float32), "hi": np.array(0.5, np.float32)}, {}),
     ("Unsqueeze", {"axes": np.array([0, 5])}, {}),
     ("CumSum", {"axis": np.array(2)}, {"reverse": 1})],
)  # fmt: skip
def test_graph_inputs_read_as_constants_compile_for_the_runs_values(tmp_path, op, feeds, attrs):
    feeds = {"x": X, **feeds}
    model = one_node(op, feeds, attrs)
    run_as_vta_run(tmp_path, model, feeds)
    with pytest.raises(InputValuesNeeded) as e:
        import_onnx(model)
    assert e.value.names and set(e.value.names) <= set(feeds) - {"x"}  # the first node's first
    assert "\n" not in str(e.value)


def test_an_input_computed_from_graph_inputs_binds_them(tmp_path):
    """Resize's sizes computed from a graph input (Concat of the batch and channels with the
    input's spatial size): the graph input is bound, the rest folds."""
    nodes = [helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape),
         helper.make_tensor_value_info("hw", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("nc", TensorProto.INT64, [2], [2, 3])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    feeds = {"x": X, "hw": np.array([7, 3])}
    run_as_vta_run(tmp_path, model.SerializeToString(), feeds)
    with pytest.raises(InputValuesNeeded, match="sizes is computed from the graph input"):
        import_onnx(model)


def test_a_value_of_another_shape_and_a_large_input_are_refused(tmp_path):
    model = one_node("ReduceSum", {"x": X, "axes": np.array([1])})
    with pytest.raises(OperatorError, match=r"input axes: the value given has the shape \[2\]"):
        import_onnx(model, values={"axes": np.array([1, 2])})
    with pytest.raises(OperatorError, match="a value is given for y, which is not an input"):
        import_onnx(model, values={"y": np.array([1])})
    big = one_node("Reshape", {"x": X, "shape": np.ones(65, np.int64)})  # over VALUE_LIMIT
    with pytest.raises(OperatorError) as e:
        import_onnx(big)
    assert not isinstance(e.value, InputValuesNeeded) and "shape is computed" in str(e.value)


def test_vta_run_compiles_for_the_runs_values(tmp_path, capsys):
    model = one_node("ReduceSum", {"x": X, "axes": np.array([1])}, {"keepdims": 0})
    (tmp_path / "m.onnx").write_bytes(model)
    np.savez(tmp_path / "in.npz", x=X, axes=np.array([1]))
    args = ["run", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz")]
    assert main([*args, "--output", str(tmp_path / "out.npz")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], X.sum(axis=1), rtol=1e-5)
    np.savez(tmp_path / "in.npz", x=X)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "the graph is compiled for the values of input(s) axes" in err


def test_align_corners_on_a_scale_that_does_not_divide(tmp_path):
    """The output's length in the coordinate formula is size x scale (2.4 here), not the
    rounded length, as the onnx package's reference and test data have it (onnxruntime takes
    the rounded one)."""
    from onnx.reference import ReferenceEvaluator

    from compiler.graph import reference

    x = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners"}
    scales = np.array([1, 1, 0.6, 0.6], np.float32)
    model = one_node("Resize", {"x": x}, attrs, {"roi": None, "scales": scales})
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(want, [[[[0, 3 * 5 / 7]]]], rtol=1e-6)
    (tmp_path / "m.onnx").write_bytes(model)
    for got in (reference.run(import_onnx(model), {"x": x}),
                compile_model(tmp_path / "m.onnx").run({"x": x})):  # fmt: skip
        np.testing.assert_allclose(got["y"], want, rtol=1e-6)


def test_cast_takes_saturate_where_it_does_not_apply(tmp_path):
    x = np.array([[1.5, -2.0, 7e3]], np.float32)
    attrs = {"to": TensorProto.FLOAT16, "saturate": 0}
    model = one_node("Cast", {"x": x}, attrs, opset=21, out=np.float16)
    (tmp_path / "m.onnx").write_bytes(model)
    got = compile_model(tmp_path / "m.onnx").run({"x": x})["y"]
    np.testing.assert_array_equal(got, x.astype(np.float16))


def test_an_unused_empty_input_is_taken_an_empty_output_given(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    empty = helper.make_tensor_value_info("e", TensorProto.FLOAT, [0])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    for reads, want in ((["x"], [0, 2]), (["e"], [])):
        graph = helper.make_graph([helper.make_node("Relu", reads, ["y"])], "m", [x, empty], [y])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
        module = compile_model(tmp_path / "m.onnx")
        got = module.run({"x": np.float32([-1, 2]), "e": np.zeros(0, np.float32)})
        np.testing.assert_array_equal(got["y"], np.float32(want))


@pytest.mark.parametrize(
    "op, want",
    [("ReduceSum", 0.0), ("ReduceProd", 1.0), ("ReduceMax", -np.inf), ("ReduceMin", np.inf),
     ("ReduceLogSumExp", -np.inf), ("ReduceL2", 0.0)],
)  # fmt: skip
def test_a_reduction_of_an_empty_input_folds(tmp_path, op, want):
    """An input with no elements has a known value: what reads it folds (a reduction over
    its empty axis to the reduction's value on nothing); the module still takes it."""
    x = np.zeros((2, 0, 4), np.float32)
    model = one_node(op, {"x": x}, {"keepdims": 1}, {"axes": np.array([1])})
    (tmp_path / "m.onnx").write_bytes(model)
    module = compile_model(tmp_path / "m.onnx")
    got = module.run({"x": x})["y"]
    np.testing.assert_array_equal(got, np.full((2, 1, 4), want, np.float32))
    np.testing.assert_array_equal(got, reference_outputs(model, {"x": x})[0])


def test_max_pool_takes_storage_order_without_its_indices(tmp_path):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    attrs = {"kernel_shape": [2, 2], "storage_order": 1}
    (tmp_path / "m.onnx").write_bytes(one_node("MaxPool", {"x": x}, attrs))
    got = compile_model(tmp_path / "m.onnx").run({"x": x})["y"]
    np.testing.assert_array_equal(got, x[:, :, 1:, 1:])
    attrs["storage_order"] = 2
    with pytest.raises(OperatorError, match="storage_order=2 is not supported"):
        import_onnx(one_node("MaxPool", {"x": x}, attrs))


def test_non_zero_folds_for_its_input_values(tmp_path):
    """NonZero's output is as long as its input has nonzeros: the graph is compiled for the
    input's values (a small graph input) or folds (a constant); a computed input is refused."""
    x = np.array([[1, 0, 3], [0, 2, 0]], np.float32)
    run_as_vta_run(tmp_path, one_node("NonZero", {"x": x}, out=np.int64), {"x": x})
    run_as_vta_run(tmp_path, one_node("NonZero", {}, {}, {"x": x}, out=np.int64), {})
    scalar = one_node("NonZero", {}, {}, {"x": np.array(True)}, out=np.int64)
    (tmp_path / "m.onnx").write_bytes(scalar)  # rank(X) rows, as ONNX infers its shape
    assert compile_model(tmp_path / "m.onnx").run({})["y"].shape == (0, 1)
    big = np.ones((9, 9), np.float32)
    with pytest.raises(OperatorError, match="must be a constant, x is computed"):
        import_onnx(one_node("NonZero", {"x": big}, out=np.int64))
