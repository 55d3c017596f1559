"""A small ONNX model of depthwise-separable blocks with `--target vta`: its depthwise convs
run on the accelerator as block-diagonal products, bit-exact against the quantized reference
on every device; the partition's per-layer rule and the quantized depthwise conv."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.graph import quant as Q
from compiler.graph.build_onnx import fused_graph
from compiler.graph.passes.partition import partition
from compiler.topi.testing import conv2d_nchw_python
from testkit.accel import DEVICES, check_groups_on_device, run_report
from vta.config import VTAConfig

CFG = VTAConfig.load("pynq")


def _separable(path) -> None:
    """1x1 conv 16 -> 24, depthwise 3x3 (ReLU6), 1x1 conv 24 -> 32, depthwise 3x3 stride 2,
    1x1 conv 32 -> 16, on 1x16x16x16; seeded weights and biases."""
    rng = np.random.default_rng(5)
    consts, nodes = {}, []

    def conv(x, cin, cout, k, name, group=1, stride=1, act="Relu"):
        consts[f"{name}_w"] = (rng.standard_normal((cout, cin // group, k, k))
                               / np.sqrt(cin * k * k / group)).astype(np.float32)  # fmt: skip
        consts[f"{name}_b"] = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                      name=name, pads=[k // 2] * 4, group=group,
                                      strides=[stride, stride]))  # fmt: skip
        if act == "Clip":
            consts["lo"], consts["hi"] = np.array(0, np.float32), np.array(6, np.float32)
            nodes.append(helper.make_node("Clip", [f"{name}_c", "lo", "hi"], [name]))
        else:
            nodes.append(helper.make_node("Relu", [f"{name}_c"], [name]))
        return name

    y = conv("x", 16, 24, 1, "p1")
    y = conv(y, 24, 24, 3, "dw1", group=24, act="Clip")
    y = conv(y, 24, 32, 1, "p2")
    y = conv(y, 32, 32, 3, "dw2", group=32, stride=2)
    y = conv(y, 32, 16, 1, "p3")
    graph = helper.make_graph(
        nodes, "separable",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, 16])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 16, 8, 8])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )  # fmt: skip
    path.write_bytes(helper.make_model(graph).SerializeToString())


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("dw") / "separable.onnx"
    _separable(path)
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 16, 16, 16)).astype(np.float32)}
    return path, feeds


def test_depthwise_convs_are_offloaded_with_the_rule_in_their_reason(model):
    places = {g.name: (g.target, g.reason) for g in partition(fused_graph(model[0]), CFG).groups}
    for dw in ("dw1", "dw2"):
        target, why = places[dw]
        assert target == "vta" and why.startswith("depthwise conv as block-diagonal products")
        assert "ms against CPU conv, Dequantize and Quantize" in why


@pytest.mark.parametrize("device", DEVICES)
def test_depthwise_groups_match_the_reference_bit_for_bit(model, device):
    check_groups_on_device(*model, CFG, device, ["p1", "dw1", "p2", "dw2", "p3"])


def test_cli_runs_the_model_with_depthwise_groups_on_the_accelerator(model, tmp_path, capsys):
    code, report = run_report(*model, tmp_path, capsys)
    assert code == 0 and report["bit_exact"] and report["output_error"] < 0.1
    where = {r["name"]: r["where"] for r in report["layers"]}
    assert where["dw1"] == where["dw2"] == "vta"


def test_quantized_depthwise_conv_is_numpy_grouped_conv():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    q = Q.quantize_conv(w, np.zeros(8), -4, -2, True, 2, 1, depthwise=True)
    assert Q.qconv_of(Q.qconv_attrs(q), q.weight, q.bias).depthwise
    assert "depthwise" not in Q.qconv_attrs(Q.quantize_conv(w[:, :1], np.zeros(8), -4, -2, True))
    x = rng.integers(-128, 128, (1, 8, 7, 7)).astype(np.int8)
    acc = conv2d_nchw_python(x.astype(np.int64), q.weight.astype(np.int64), 2, 1, groups=8)
    acc = acc + q.bias.astype(np.int64)[None, :, None, None]
    np.testing.assert_array_equal(Q.run_qconv(q, x), np.clip(acc >> q.shift, 0, 127))
