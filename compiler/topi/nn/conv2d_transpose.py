"""2-d transposed convolution (ONNX ConvTranspose) and grouped convolution, in NCHW.

The transposed convolution is the gradient of a strided convolution: each input element
scatters its kernel-sized patch into the output. Written as a gather, output (y, x) sums the
inputs (y + pad - ky * dil) / stride over the kernel rows that divide exactly."""

from __future__ import annotations

from collections.abc import Sequence

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag
from .pad import pad_window


def _clamp(i, n: int):
    """An index kept inside [0, n) (the value read there is discarded when out of range)."""
    return te.max(te.min(i, n - 1), 0)


def conv2d_transpose_nchw(
    data: Tensor,
    weight: Tensor,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int] = (1, 1),
    output_padding: Sequence[int] = (0, 0),
    group: int = 1,
) -> Tensor:
    """data [N, C, H, W], weight [C, OC/group, KH, KW], pads (top, left, bottom, right) ->
    [N, OC, OH, OW] with OH = (H - 1) * stride + (KH - 1) * dil + 1 + output_padding - pads."""
    n, c, h, w = data.shape
    wc, ocg, kh, kw = weight.shape
    if wc != c or c % group:
        raise OperatorError(f"conv_transpose: {c} input channels, weight for {wc}, group {group}")
    (sh, sw), (dh, dw), (oph, opw) = strides, dilations, output_padding
    top, left, bottom, right = pads
    oh = (h - 1) * sh + (kh - 1) * dh + 1 + oph - top - bottom
    ow = (w - 1) * sw + (kw - 1) * dw + 1 + opw - left - right
    cg = c // group
    rc, ry, rx = te.reduce_axis(cg, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")

    def fcompute(b, o, y, x):
        g = o // ocg
        ty, tx = y + top - ry * dh, x + left - rx * dw
        iy, ix = ty // sh, tx // sw
        ok = te.all(ty >= 0, tx >= 0, ty % sh == 0, tx % sw == 0, iy < h, ix < w)
        ci = g * cg + rc
        value = te.if_then_else(
            ok, data[b, ci, _clamp(iy, h), _clamp(ix, w)], te.const(0.0, data.dtype)
        )
        return te.sum(value * weight[ci, o % ocg, ry, rx], axis=[rc, ry, rx])

    return te.compute(
        (n, ocg * group, oh, ow), fcompute, name="conv2d_transpose", tag=tag.CONV2D_TRANSPOSE
    )


def group_conv2d_nchw(
    data: Tensor, weight: Tensor, stride, padding, dilation, group: int
) -> Tensor:
    """data [N, C, H, W], weight [OC, C/group, KH, KW] -> [N, OC, OH, OW]: each of `group`
    channel groups convolved with its share of the filters."""
    n, c, _, _ = data.shape
    oc, cg, kh, kw = weight.shape
    if c % group or oc % group or cg != c // group:
        raise OperatorError(f"group conv: {c} channels, {oc} filters of {cg}, group {group}")
    padded, (oh, ow), (sh, sw), (dh, dw) = pad_window(data, 2, (kh, kw), stride, padding, dilation)
    ocg = oc // group
    rc, ry, rx = te.reduce_axis(cg, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute(
        (n, oc, oh, ow),
        lambda b, f, y, x: te.sum(
            padded[b, (f // ocg) * cg + rc, y * sh + ry * dh, x * sw + rx * dw]
            * weight[f, rc, ry, rx],
            axis=[rc, ry, rx],
        ),
        name="group_conv2d_nchw",
        tag=tag.GROUP_CONV2D_NCHW,
    )
