"""Windows of 1 to 3 spatial axes beyond the packed 2-d kernels: 3-d Conv, MaxPool and
AveragePool (pads, strides, dilations, groups, auto_pad, ceil_mode, count_include_pad), LpPool
in 1-3 dimensions, 1-d and 3-d ConvTranspose, as seeded one-node models on the reference
executor and compiled for the CPU, both against onnxruntime; SpaceToDepth's modes and an
output_shape past ConvTranspose's full output against the onnx package's reference."""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from testkit.onnx_models import check, one_node  # noqa: E402

RNG = np.random.default_rng(0)
VOLUME = RNG.normal(size=(1, 4, 5, 6, 7)).astype(np.float32)


def check_volume_conv(tmp_path, op: str, weight: tuple, outputs: int, attrs, bias) -> None:
    """A seeded one-node `op` with a (3, 2, 3) kernel of `weight` = (dim 0, dim 1 before
    grouping) on VOLUME, with a bias of `outputs` where asked, against onnxruntime."""
    group = attrs.get("group", 1)
    consts = {"w": RNG.normal(size=(weight[0], weight[1] // group, 3, 2, 3)).astype(np.float32)}
    if bias:
        consts["b"] = RNG.normal(size=(outputs,)).astype(np.float32)
    check(tmp_path, one_node(op, {"x": VOLUME}, attrs, consts), {"x": VOLUME}, rtol=1e-4)


@pytest.mark.parametrize(
    "attrs, bias",
    [({}, False),
     ({"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 2, 1]}, True),
     ({"dilations": [2, 1, 2], "group": 2}, True),
     ({"auto_pad": "SAME_UPPER", "strides": [2, 2, 1]}, False),
     ({"auto_pad": "SAME_LOWER", "group": 4}, True)],
)  # fmt: skip
def test_conv_3d(tmp_path, attrs, bias):
    check_volume_conv(tmp_path, "Conv", (8, 4), 8, attrs, bias)


POOLS = [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 3], "strides": [2, 2, 2], "pads": [1, 0, 1, 1, 1, 0]},
    {"kernel_shape": [2, 3, 2], "strides": [2, 2, 3], "ceil_mode": 1},
    {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "pads": [1, 1, 1, 1, 1, 1]},
    {"kernel_shape": [3, 3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]},
]


@pytest.mark.parametrize("attrs", POOLS)
@pytest.mark.parametrize("op, extra", [("MaxPool", {}), ("AveragePool", {}),
                                       ("AveragePool", {"count_include_pad": 1})])  # fmt: skip
def test_pool_3d(tmp_path, attrs, op, extra):
    model = one_node(op, {"x": VOLUME}, {**attrs, **extra}, opset=19)
    check(tmp_path, model, {"x": VOLUME})


@pytest.mark.parametrize(
    "shape, attrs",
    [((1, 3, 9), {"kernel_shape": [3]}),
     ((1, 3, 9), {"kernel_shape": [2], "strides": [2], "pads": [1, 1], "p": 1}),
     ((2, 3, 6, 5), {"kernel_shape": [2, 3], "p": 3}),
     ((2, 3, 6, 5), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
     ((2, 3, 6, 5), {"kernel_shape": [2, 2], "dilations": [2, 2], "ceil_mode": 1}),
     ((1, 2, 4, 5, 6), {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]})],
)  # fmt: skip
def test_lp_pool(tmp_path, shape, attrs):
    x = RNG.normal(size=shape).astype(np.float32)
    check(tmp_path, one_node("LpPool", {"x": x}, attrs, opset=18), {"x": x}, rtol=1e-4)


@pytest.mark.parametrize(
    "attrs",
    [{}, {"strides": [2], "pads": [1, 0], "output_padding": [1]},
     {"dilations": [2], "group": 2}, {"strides": [3], "output_shape": [20]}],
)  # fmt: skip
def test_conv_transpose_1d(tmp_path, attrs):
    """As the 2-d one on a unit height."""
    x = RNG.normal(size=(1, 4, 7)).astype(np.float32)
    per_group = 3 if attrs.get("group", 1) == 1 else 1  # output channels of each group
    w = RNG.normal(size=(4, per_group, 3)).astype(np.float32)
    check(tmp_path, one_node("ConvTranspose", {"x": x}, attrs, {"w": w}), {"x": x}, rtol=1e-4)


@pytest.mark.parametrize(
    "attrs, bias",
    [({}, False),
     ({"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1], "output_padding": [1, 0, 1]}, True),
     ({"dilations": [2, 1, 2], "group": 2}, True),
     ({"strides": [2, 2, 1], "output_shape": [9, 12, 8]}, False),
     ({"auto_pad": "SAME_UPPER", "strides": [2, 2, 2]}, True)],
)  # fmt: skip
def test_conv_transpose_3d(tmp_path, attrs, bias):
    check_volume_conv(tmp_path, "ConvTranspose", (4, 6), 6, attrs, bias)


def test_conv_transpose_output_shape_past_the_full_output(tmp_path):
    """An output_shape larger than the full output: zeros at the end (as output_padding),
    as the onnx package's reference has it."""
    from onnx.reference import ReferenceEvaluator

    from compiler.graph import reference
    from compiler.graph.build_onnx import compile_model
    from compiler.graph.onnx_import import import_onnx

    x = RNG.normal(size=(1, 2, 3, 3)).astype(np.float32)
    w = RNG.normal(size=(2, 2, 3, 3)).astype(np.float32)
    model = one_node("ConvTranspose", {"x": x}, {"strides": [3, 2], "output_shape": [10, 8]},
                     {"w": w})  # fmt: skip
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert want.shape == (1, 2, 10, 8) and not want[..., -1, :].any()
    (tmp_path / "m.onnx").write_bytes(model)
    for got in (reference.run(import_onnx(model), {"x": x}),
                compile_model(tmp_path / "m.onnx").run({"x": x})):  # fmt: skip
        np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes_at_opset_28(tmp_path, mode):
    """SpaceToDepth's mode (opset 28) against the onnx package's reference."""
    from onnx.reference import ReferenceEvaluator

    from compiler.graph import reference
    from compiler.graph.build_onnx import compile_model
    from compiler.graph.onnx_import import import_onnx

    x = RNG.normal(size=(1, 3, 4, 6)).astype(np.float32)
    model = one_node("SpaceToDepth", {"x": x}, {"blocksize": 2, "mode": mode}, opset=28)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (tmp_path / "m.onnx").write_bytes(model)
    for got in (reference.run(import_onnx(model), {"x": x}),
                compile_model(tmp_path / "m.onnx").run({"x": x})):  # fmt: skip
        np.testing.assert_array_equal(got["y"], want)
