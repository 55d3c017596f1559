"""The CPU's tensors in every dtype ONNX gives its operators here (float16, float64, int8 ...
uint64, beside float32, int64, int32 and bool): seeded one-node models on the reference
executor and compiled for the CPU, both against onnxruntime; a dtype without a CPU kernel is
refused in one line."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.errors import OperatorError
from compiler.graph.build_onnx import compile_model

ort = pytest.importorskip("onnxruntime")

from testkit.onnx_models import check, one_node  # noqa: E402

INTEGERS = [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64]


def integers(dtype, shape, seed, low=None):
    """Seeded values of `dtype` (negative ones where it is signed), never 0 when `low` is 1."""
    info = np.iinfo(dtype)
    lo = max(info.min, -50) if low is None else low
    return np.random.default_rng(seed).integers(lo, min(info.max, 50), shape).astype(dtype)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_arithmetic_broadcasts(tmp_path, op, dtype):
    """Integer Div truncates toward zero (negative operands where the dtype is signed);
    unsigned Sub wraps as onnxruntime's does."""
    feeds = {"a": integers(dtype, (3, 4), 0), "b": integers(dtype, (4,), 1, low=1)}
    if np.iinfo(dtype).min < 0 and op == "Div":
        feeds["b"] = feeds["b"] * np.array([1, -1, 1, -1], dtype)
    check(tmp_path, one_node(op, feeds, out=dtype), feeds)


@pytest.mark.parametrize("op", ["Equal", "Less", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.uint64, np.float16, np.float64])
def test_comparison(tmp_path, op, dtype):
    rng = np.random.default_rng(0)
    feeds = {"a": rng.integers(0, 4, (3, 4)).astype(dtype), "b": rng.integers(0, 4, (4,))}
    feeds["b"] = feeds["b"].astype(dtype)
    check(tmp_path, one_node(op, feeds, out=np.bool_), feeds)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize(
    "op, attrs",
    [("Exp", {}), ("Sqrt", {}), ("Sigmoid", {}), ("Erf", {}), ("Elu", {"alpha": 2.0}),
     ("Softmax", {"axis": 1}), ("ReduceSum", {"keepdims": 1}), ("Abs", {}), ("Neg", {})],
)  # fmt: skip
def test_float16_and_float64_math(tmp_path, dtype, op, attrs):
    x = np.random.default_rng(3).uniform(0.1, 3, (2, 3, 4)).astype(dtype)
    check(tmp_path, one_node(op, {"x": x}, attrs, out=dtype), {"x": x}, rtol=1e-3)


def test_float64_conv_and_matmul(tmp_path):
    """float64 convolutions and products run in plain-layout kernels of their own dtype (the
    packed kernels are float32)."""
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(1, 2, 5, 5)), rng.normal(size=(3, 2, 3, 3))
    model = one_node("Conv", {"x": x}, {"pads": [1, 1, 1, 1]}, {"w": w}, out=np.float64)
    check(tmp_path, model, {"x": x}, rtol=1e-9)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 5))
    check(tmp_path, one_node("MatMul", {"a": a, "b": b}, out=np.float64), {"a": a, "b": b})


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_integer_clip_and_max_pool(tmp_path, dtype):
    x = integers(dtype, (1, 2, 5, 5), 5)
    lo, hi = np.array(2, dtype), np.array(30, dtype)
    check(tmp_path, one_node("Clip", {"x": x}, consts={"lo": lo, "hi": hi}, out=dtype), {"x": x})
    attrs = {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0], "strides": [2, 1]}
    check(tmp_path, one_node("MaxPool", {"x": x}, attrs, out=dtype), {"x": x})


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_power(tmp_path, dtype):
    """An integer base raised to an integer exponent stays exact."""
    feeds = {"x": np.array([[2, -3, 5, 7], [0, 1, -1, 11]], dtype),
             "e": np.array([3, 2, 4, 1], dtype)}  # fmt: skip
    check(tmp_path, one_node("Pow", feeds, out=dtype), feeds)


@pytest.mark.parametrize(
    "source, to",
    [(np.float16, np.float32), (np.float32, np.float16), (np.float64, np.float16),
     (np.float16, np.float64), (np.uint8, np.float32), (np.float32, np.int8),
     (np.int16, np.uint32), (np.uint64, np.float64)],
)  # fmt: skip
def test_cast_between_widths(tmp_path, source, to):
    x = np.array([[0.0, 1.5, 3.25, 7.0, 100.0, 0.1]], np.float32).astype(source)
    model = one_node(
        "Cast", {"x": x}, {"to": helper.np_dtype_to_tensor_dtype(np.dtype(to))}, out=to
    )
    check(tmp_path, model, {"x": x})


def test_a_dtype_without_a_cpu_kernel_is_refused_in_one_line(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)
    graph = helper.make_graph([node], "m", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    with pytest.raises(OperatorError, match="inputs x: the CPU graph runs float32, .*uint8") as e:
        compile_model(tmp_path / "m.onnx")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_integer_division_is_defined_for_every_divisor(tmp_path, dtype):
    """x / 0 is 0 and a signed minimum / -1 wraps to itself (ONNX leaves both undefined; the
    hardware's division traps on them), on the reference executor and the CPU alike."""
    from compiler.graph import reference
    from compiler.graph.onnx_import import import_onnx

    low = np.iinfo(dtype).min
    a = np.array([7, -7, 7, low, 5, 0], dtype=np.int64).astype(dtype)
    b = np.array([2, 2, 0, -1, -1, 0], dtype=np.int64).astype(dtype)
    want = np.array([3, -3, 0, low, -5, 0], dtype=np.int64).astype(dtype)
    if low == 0:  # unsigned: -7, -1 and -5 wrap as numpy wraps them
        with np.errstate(over="ignore"):
            want = np.where(b == 0, 0, a // np.where(b == 0, 1, b)).astype(dtype)
    model = one_node("Div", {"a": a, "b": b}, out=dtype)
    (tmp_path / "m.onnx").write_bytes(model)
    np.testing.assert_array_equal(reference.run(import_onnx(model), {"a": a, "b": b})["y"], want)
    np.testing.assert_array_equal(
        compile_model(tmp_path / "m.onnx").run({"a": a, "b": b})["y"], want
    )


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
@pytest.mark.parametrize(
    "op, attrs, consts",
    [("ReduceSum", {"keepdims": 0}, {"axes": np.array([1])}),
     ("ReduceMax", {}, {"axes": np.array([0, 2])}),
     ("ReduceMin", {}, {"axes": np.array([1])}),
     ("ReduceProd", {}, {"axes": np.array([2])}),
     ("ReduceMean", {}, {"axes": np.array([0, 1])}),
     ("CumSum", {"reverse": 1}, {"axis": np.array(1)}),
     ("Pad", {"mode": "wrap"}, {"pads": np.array([0, 1, 2, 0, 2, 1])})],
)  # fmt: skip
def test_integer_reductions_and_rearrangements(tmp_path, dtype, op, attrs, consts):
    x = integers(dtype, (2, 3, 4), 7, low=0 if op == "ReduceProd" else None)
    if op == "ReduceProd":
        x = x % 4
    check(tmp_path, one_node(op, {"x": x}, attrs, consts, out=dtype), {"x": x})


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_bool_reductions(tmp_path, op):
    x = np.random.default_rng(8).random((3, 4)) < 0.3
    model = one_node(op, {"x": x}, {"keepdims": 0}, {"axes": np.array([1])}, opset=20, out=bool)
    check(tmp_path, model, {"x": x})
