"""Slice, Pad modes, reductions, LogSoftmax, Resize, ConvTranspose and grouped conv against the
graph's numpy reference kernels (compiler.graph.reference), built with the x86 schedules."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.graph import reference as ref
from compiler.topi import x86


def build_run(run, out, placeholders, *arrays):
    return run(x86.schedule_injective(out), placeholders, out, *arrays)


@pytest.mark.parametrize(
    "starts, ends, axes, steps",
    [([1, 0], [3, 5], [1, 3], [1, 2]), ([3], [-1], [2], [-1]), ([4, 1], [0, 6], [3, 1], [-2, 3])],
)
def test_strided_slice(run, rng, starts, ends, axes, steps):
    a = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    B = topi.nn.strided_slice(A, starts, ends, axes, steps)
    want = ref.slice_(a, starts=starts, ends=ends, axes=axes, steps=steps)
    np.testing.assert_array_equal(build_run(run, B, [A], a), want)


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_pad_modes(run, rng, mode):
    a = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    before, after = [0, 1, 2, 3], [0, 0, 3, 1]
    B = topi.nn.pad_mode(A, before, after, mode)
    want = ref.pad(a, pads=before + after, mode=mode, value=0.0)
    np.testing.assert_array_equal(build_run(run, B, [A], a), want)
    with pytest.raises(ValueError, match="reflecting"):
        topi.nn.pad_mode(A, [0, 0, 4, 0], [0] * 4, "reflect")


@pytest.mark.parametrize("kind", ["sum", "mean", "max"])
@pytest.mark.parametrize("axes, keepdims", [([2, 3], True), ([1], False), (None, False)])
def test_reduce(run, rng, kind, axes, keepdims):
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    B = topi.nn.reduce(A, kind, axes, keepdims)
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max}[kind]
    want = fn(a, axis=None if axes is None else tuple(axes), keepdims=keepdims)
    np.testing.assert_allclose(build_run(run, B, [A], a), want, rtol=1e-5, atol=1e-5)


def test_log_softmax(run, rng):
    a = (rng.standard_normal((3, 10)) * 20).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    B = topi.nn.log_softmax(A, axis=1)
    want = ref.log_softmax(a, axis=1)
    np.testing.assert_allclose(build_run(run, B, [A], a), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "mode, coord, nearest, sizes",
    [
        ("nearest", "asymmetric", "floor", [1, 2, 8, 10]),
        ("nearest", "half_pixel", "round_prefer_floor", [1, 2, 8, 15]),
        ("nearest", "tf_half_pixel_for_nn", "round_prefer_ceil", [1, 2, 3, 4]),
        ("linear", "half_pixel", "round_prefer_floor", [1, 2, 8, 10]),
        ("linear", "align_corners", "round_prefer_floor", [1, 2, 7, 9]),
        ("linear", "pytorch_half_pixel", "round_prefer_floor", [1, 2, 1, 12]),
    ],
)
def test_resize(run, rng, mode, coord, nearest, sizes):
    a = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    A = te.placeholder(a.shape, name="A")
    scales = [n / m for n, m in zip(sizes, a.shape, strict=True)]
    B = topi.nn.resize(A, sizes, scales, mode, coord, nearest)
    want = ref.resize(
        a,
        sizes=sizes,
        scales=scales,
        mode=mode,
        coordinate_transformation_mode=coord,
        nearest_mode=nearest,
    )
    np.testing.assert_allclose(build_run(run, B, [A], a), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "strides, pads, dilations, output_padding, group",
    [((2, 2), (1, 1, 0, 0), (1, 1), (1, 0), 1), ((1, 2), (0, 1, 1, 0), (2, 1), (0, 0), 2)],
)
def test_conv_transpose(run, rng, strides, pads, dilations, output_padding, group):
    x = rng.standard_normal((1, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    X, W = te.placeholder(x.shape, name="X"), te.placeholder(w.shape, name="W")
    Y = topi.nn.conv2d_transpose_nchw(X, W, strides, pads, dilations, output_padding, group)
    want = ref.conv_transpose(
        x,
        w,
        pads=pads,
        strides=strides,
        dilations=dilations,
        group=group,
        output_padding=output_padding,
    )
    np.testing.assert_allclose(build_run(run, Y, [X, W], x, w), want, rtol=1e-4, atol=1e-4)


def test_group_conv(run, rng):
    x = rng.standard_normal((1, 8, 7, 7)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    X, W = te.placeholder(x.shape, name="X"), te.placeholder(w.shape, name="W")
    Y = topi.nn.group_conv2d_nchw(X, W, (2, 1), (1, 0, 1, 2), (1, 2), group=2)
    want = ref.conv(x, w, pads=[1, 0, 1, 2], strides=[2, 1], dilations=[1, 2], group=2)
    np.testing.assert_allclose(build_run(run, Y, [X, W], x, w), want, rtol=1e-4, atol=1e-4)
