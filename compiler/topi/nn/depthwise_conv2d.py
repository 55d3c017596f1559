"""Depthwise 2-d convolution: each input channel convolved with its own filters."""

from __future__ import annotations

from typing import Any

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag
from .pad import pad_window


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
    data, (oh, ow), (sh, sw), (dh, dw) = pad_window(Input, 2, (kh, kw), stride, padding, dilation)
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


def depthwise_conv2d_NCHWc(
    data: Tensor,
    kernel: Tensor,
    stride: Any,
    padding: Any,
    dilation: Any = 1,
    out_dtype: str | None = None,
) -> Tensor:
    """data [N, C/cb, H, W, cb], kernel [C/cb, 1, KH, KW, 1, cb] -> [N, C/cb, OH, OW, cb]
    (channel multiplier 1): each channel of a block is a lane of one vector."""
    out_dtype = out_dtype or data.dtype
    n, chunks, h, w, cb = data.shape
    kc, one, kh, kw, one_b, kb = kernel.shape
    if (kc, kb, one, one_b) != (chunks, cb, 1, 1):
        raise OperatorError(
            f"depthwise_conv2d_NCHWc: data has {chunks}x{cb} channels, kernel {kernel.shape} "
            f"expects [{chunks}, 1, KH, KW, 1, {cb}]"
        )
    dpad, (oh, ow), (sh, sw), (dh, dw) = pad_window(data, 2, (kh, kw), stride, padding, dilation)
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute(
        (n, chunks, oh, ow, cb),
        lambda b, c, y, x, k: te.sum(
            dpad[b, c, y * sh + ry * dh, x * sw + rx * dw, k].astype(out_dtype)
            * kernel[c, 0, ry, rx, 0, k].astype(out_dtype),
            axis=[ry, rx],
        ),
        name="depthwise_conv2d_NCHWc",
        tag=tag.DEPTHWISE_CONV2D_NCHWC,
    )
