"""Power-of-two quantization of convolutions: residuals, zero points."""

import numpy as np
import pytest

from compiler.errors import LoweringError
from compiler.graph.quant import dequantize, quantize, quantize_conv, run_qconv
from compiler.topi.testing import conv2d_nchw_python


def conv_f32(x, w, b, stride: int, pad: int) -> np.ndarray:
    return conv2d_nchw_python(x, w, stride, pad) + b[None, :, None, None]


@pytest.mark.parametrize("pre_shift", [True, False])
def test_a_coarse_residual_enters_by_pre_shift_or_coarser_weights(pre_shift):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 8, 3, 3)).astype(np.float32) * 0.05
    b = rng.normal(0, 0.1, 4).astype(np.float32)
    x = rng.random((1, 8, 6, 6)).astype(np.float32)
    res = rng.random((1, 4, 6, 6)).astype(np.float32) * 8
    q = quantize_conv(w, b, -7, -4, True, 1, 1, e_residual=-4, pre_shift=pre_shift)
    assert q.residual_shift == 6 and (q.pre_shift > 0) == pre_shift
    got = dequantize(run_qconv(q, quantize(x, -7), quantize(res, -4)), q.e_out)
    want = np.maximum(conv_f32(x, w, b, 1, 1) + res, 0)
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()


def test_zero_points_fold_into_the_bias_and_give_a_relu_one_more_bit():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((8, 8, 1, 1)).astype(np.float32) * 0.3
    b = rng.normal(0, 0.1, 8).astype(np.float32)
    x = rng.random((2, 8, 5, 5)).astype(np.float32)  # never negative: zero point -128
    res = rng.random((2, 8, 5, 5)).astype(np.float32)
    want = np.maximum(conv_f32(x, w, b, 1, 0) + res, 0)
    assert np.abs(want).max() < 127 * 2.0**-5
    errors = []
    for z, e in ((0, 0), (-128, -1)):  # 255 levels: one exponent finer
        q = quantize_conv(w, b, -7 + e, -5 + e, True, e_residual=-7 + e, pre_shift=False,
                          zeros=(z, z, 0, z))  # fmt: skip
        assert q.relu == (z == 0)  # the int8 clip at -128 is the ReLU
        xq, rq = quantize(x, -7 + e, z), quantize(res, -7 + e, z)
        got = dequantize(run_qconv(q, xq, rq), q.e_out, z)
        errors.append(np.abs(got - want).mean())
    assert errors[1] < 0.7 * errors[0]


def test_zero_points_refuse_a_padded_input_and_a_signed_output():
    w = np.ones((2, 2, 3, 3), np.float32)
    with pytest.raises(LoweringError, match="zero-padded"):
        quantize_conv(w, np.zeros(2, np.float32), 0, 0, True, pad=1, zeros=(-128, 0, 0, 0))
    with pytest.raises(LoweringError, match="ReLU"):
        quantize_conv(w, np.zeros(2, np.float32), 0, 0, False, zeros=(0, 0, 0, -128))
