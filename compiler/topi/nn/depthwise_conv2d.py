"""Depthwise 2-d convolution: each input channel convolved with its own filters."""

from __future__ import annotations

from typing import Any

from vta.errors import OperatorError

from ... import te
from ...te.tensor import Tensor
from .. import tag
from .pad import pad_hw
from .utils import get_pad_tuple, out_size, pair


def depthwise_conv2d_nchw(
    Input: Tensor,
    Filter: Tensor,
    stride: Any,
    padding: Any,
    dilation: Any = 1,
    out_dtype: str | None = None,
) -> Tensor:
    """Input [N, C, H, W], Filter [C, M, KH, KW] -> [N, C * M, OH, OW] (M: channel multiplier)."""
    out_dtype = out_dtype or Input.dtype
    n, c, h, w = Input.shape
    fc, mult, kh, kw = Filter.shape
    if fc != c:
        raise OperatorError(f"depthwise_conv2d_nchw: input has {c} channels, filter has {fc}")
    (sh, sw), (dh, dw) = pair(stride), pair(dilation)
    pads = get_pad_tuple(padding, (kh, kw))
    oh = out_size(h, kh, sh, dh, pads[0] + pads[2])
    ow = out_size(w, kw, sw, dw, pads[1] + pads[3])
    data = pad_hw(Input, 2, pads)
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute(
        (n, c * mult, oh, ow),
        lambda b, ch, y, x: te.sum(
            data[b, ch // mult, y * sh + ry * dh, x * sw + rx * dw].astype(out_dtype)
            * Filter[ch // mult, ch % mult, ry, rx].astype(out_dtype),
            axis=[ry, rx],
        ),
        name="depthwise_conv2d_nchw",
        tag=tag.DEPTHWISE_CONV2D_NCHW,
    )
