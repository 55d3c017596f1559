"""conv2d (NCHW, NCHWc) and depthwise conv2d against numpy, incl. odd sizes and strides."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.topi import testing, x86

# (batch, in_ch, size, out_ch, kernel, stride, padding, dilation)
CASES = [
    (1, 16, 14, 32, 3, 1, 1, 1),
    (2, 8, 9, 16, 3, 2, 1, 1),
    (1, 16, 11, 16, 1, 1, 0, 1),
    (1, 8, 10, 16, 3, 1, "SAME", 2),
    (1, 8, 12, 16, 5, 2, (2, 1), 1),
]


def rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("n,ic,size,oc,k,stride,pad,dil", CASES)
def test_conv2d_nchw(run, rng, n, ic, size, oc, k, stride, pad, dil):
    a, w = rand(rng, (n, ic, size, size + 1)), rand(rng, (oc, ic, k, k))
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    C = topi.nn.conv2d_nchw(A, W, stride, pad, dil)
    got = run(x86.schedule_conv2d_nchw(C), [A, W], C, a, w)
    ref = testing.conv2d_nchw_python(a, w, stride, pad, dil)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,ic,size,oc,k,stride,pad,dil", CASES)
@pytest.mark.parametrize("ic_bn,oc_bn", [(8, 16), (4, 8)])
def test_conv2d_NCHWc(run, rng, n, ic, size, oc, k, stride, pad, dil, ic_bn, oc_bn):
    a, w = rand(rng, (n, ic, size, size + 1)), rand(rng, (oc, ic, k, k))
    ap, wp = testing.nchw_pack(a, ic_bn), testing.oihw_pack(w, ic_bn, oc_bn)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    C = topi.nn.conv2d_NCHWc(A, W, stride, pad, dil)
    got = run(x86.schedule_conv2d_NCHWc(C), [A, W], C, ap, wp)
    ref = testing.conv2d_nchw_python(a, w, stride, pad, dil)
    np.testing.assert_allclose(testing.nchwc_unpack(got), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_NCHWc_fused_bias_relu(run, rng):
    a, w, b = rand(rng, (1, 16, 8, 8)), rand(rng, (32, 16, 3, 3)), rand(rng, (2, 1, 1, 16))
    ap, wp = testing.nchw_pack(a, 16), testing.oihw_pack(w, 16, 16)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    B = te.placeholder(b.shape, name="B")
    Y = topi.nn.relu(topi.add(topi.nn.conv2d_NCHWc(A, W, 1, 1), B))
    s = x86.schedule_conv2d_NCHWc(Y, reg_n=4)
    got = testing.nchwc_unpack(run(s, [A, W, B], Y, ap, wp, b))
    bias = b.reshape(2, 16).reshape(32)[None, :, None, None]
    ref = np.maximum(testing.conv2d_nchw_python(a, w, 1, 1) + bias, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_conv2d_channel_mismatch_is_named():
    with pytest.raises(ValueError, match="16 channels, filter expects 8"):
        topi.nn.conv2d_nchw(te.placeholder((1, 16, 5, 5)), te.placeholder((4, 8, 3, 3)), 1, 1)


@pytest.mark.parametrize(
    "n,c,size,mult,k,stride,pad",
    [(1, 8, 14, 1, 3, 1, 1), (2, 3, 9, 2, 3, 2, 1), (1, 4, 10, 1, 5, 1, "VALID")],
)
def test_depthwise_conv2d_nchw(run, rng, n, c, size, mult, k, stride, pad):
    a, w = rand(rng, (n, c, size, size + 3)), rand(rng, (c, mult, k, k))
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    C = topi.nn.depthwise_conv2d_nchw(A, W, stride, pad)
    got = run(x86.schedule_depthwise_conv2d_nchw(C), [A, W], C, a, w)
    ref = testing.depthwise_conv2d_python_nchw(a, w, stride, pad)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
