"""Quantization (power-of-two scales): exponents, quantized convolutions against fp32, the
accelerator's activation and weight packing, and the ONNX path's accuracy report."""

import numpy as np
import pytest

from compiler.errors import LoweringError
from compiler.graph.quant import (
    dequantize,
    magnitude,
    pow2_exponent,
    quantize,
    quantize_conv,
    run_qconv,
)
from compiler.graph.reference import conv
from compiler.graph.runtime import pack_act, pack_weight, unpack_act
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
        conv(
            x.astype(np.float32),
            w.astype(np.float32),
            b.astype(np.float32),
            pads=[1] * 4,
            strides=[1, 1],
            dilations=[1, 1],
            group=1,
        ),
        0,
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


def test_onnx_accuracy_reports_output_and_per_layer_errors():
    from benchmarks.vta_accuracy import onnx_accuracy

    r = onnx_accuracy("dqn", "minmax", 3)
    assert r["path"] == "onnx" and r["inputs"] == 3 and 0 <= r["top1_agreement"] <= 3
    assert 0 < r["max_error"] < 1
    layers = r["layers"]
    assert len(layers) == 5 and list(layers.values())[-1] == r["max_error"]  # the CPU's 4 + 1
    with pytest.raises(ValueError, match="unknown"):
        onnx_accuracy("vgg", "minmax", 1)
