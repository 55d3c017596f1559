"""2-d convolution in NCHW and in NCHWc (channels packed in blocks, innermost)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag
from .pad import pad_window


def conv2d_nchw(
    Input: Tensor,
    Filter: Tensor,
    stride: Any,
    padding: Any,
    dilation: Any = 1,
    out_dtype: str | None = None,
) -> Tensor:
    """Input [N, C, H, W] with Filter [OC, C, KH, KW] -> [N, OC, OH, OW]."""
    out_dtype = out_dtype or Input.dtype
    n, c, h, w = Input.shape
    oc, fc, kh, kw = Filter.shape
    if fc != c:
        raise OperatorError(f"conv2d_nchw: input has {c} channels, filter expects {fc}")
    data, (oh, ow), (sh, sw), (dh, dw) = pad_window(Input, 2, (kh, kw), stride, padding, dilation)
    rc, ry, rx = te.reduce_axis(c, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute(
        (n, oc, oh, ow),
        lambda b, f, y, x: te.sum(
            data[b, rc, y * sh + ry * dh, x * sw + rx * dw].astype(out_dtype)
            * Filter[f, rc, ry, rx].astype(out_dtype),
            axis=[rc, ry, rx],
        ),
        name="conv2d_nchw",
        tag=tag.CONV2D_NCHW,
    )


def conv2d_NCHWc(
    data: Tensor,
    kernel: Tensor,
    stride: Any,
    padding: Any,
    dilation: Any = 1,
    out_dtype: str | None = None,
) -> Tensor:
    """data [N, C/ic_bn, H, W, ic_bn] with kernel [OC/oc_bn, C/ic_bn, KH, KW, ic_bn, oc_bn]
    -> [N, OC/oc_bn, OH, OW, oc_bn]: vector-friendly, since oc_bn is contiguous everywhere."""
    out_dtype = out_dtype or data.dtype
    n, ic_chunk, h, w, ic_bn = data.shape
    oc_chunk, k_ic_chunk, kh, kw, k_ic_bn, oc_bn = kernel.shape
    if (k_ic_chunk, k_ic_bn) != (ic_chunk, ic_bn):
        raise OperatorError(
            f"conv2d_NCHWc: data has {ic_chunk}x{ic_bn} input channels, kernel expects "
            f"{k_ic_chunk}x{k_ic_bn}"
        )
    dpad, (oh, ow), (sh, sw), (dh, dw) = pad_window(data, 2, (kh, kw), stride, padding, dilation)
    icc, icb = te.reduce_axis(ic_chunk, "ic_chunk"), te.reduce_axis(ic_bn, "ic_block")
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute(
        (n, oc_chunk, oh, ow, oc_bn),
        lambda b, oc, y, x, ob: te.sum(
            dpad[b, icc, y * sh + ry * dh, x * sw + rx * dw, icb].astype(out_dtype)
            * kernel[oc, icc, ry, rx, icb, ob].astype(out_dtype),
            axis=[icc, ry, rx, icb],
        ),
        name="conv2d_NCHWc",
        tag=tag.CONV2D_NCHWC,
    )


def conv2d_1x1_NCHWc(
    data: Tensor, kernel: Tensor, chunk: int, out_dtype: str | None = None
) -> Tensor:
    """A pointwise conv2d_NCHWc (1x1 kernel, stride 1, no padding): data [N, C/ic_bn, H, W,
    ic_bn] with kernel [OC/oc_bn, C/ic_bn, 1, 1, ic_bn, oc_bn] -> [N, OC/oc_bn, H, W, oc_bn],
    as partial sums over chunks of `chunk` input-channel blocks (stage `conv2d_1x1_partial`
    [N, C/ic_bn/chunk, OC/oc_bn, H*W, oc_bn]: the positions flattened, so a register tile
    need not divide a row) that the output adds up. A chunk's weights are small enough to
    stay in L1 while every position passes them."""
    out_dtype = out_dtype or data.dtype
    n, ic_chunk, h, w, ic_bn = data.shape
    oc_chunk, k_ic_chunk, kh, kw, k_ic_bn, oc_bn = kernel.shape
    if (k_ic_chunk, k_ic_bn, kh, kw) != (ic_chunk, ic_bn, 1, 1):
        raise OperatorError(
            f"conv2d_1x1_NCHWc: data has {ic_chunk}x{ic_bn} input channels, kernel "
            f"{k_ic_chunk}x{k_ic_bn} with a {kh}x{kw} window (1x1 expected)"
        )
    if chunk < 1 or ic_chunk % chunk:
        raise OperatorError(
            f"conv2d_1x1_NCHWc: chunks of {chunk} blocks do not divide {ic_chunk} input blocks"
        )
    ici, icb = te.reduce_axis(chunk, "ic_chunk"), te.reduce_axis(ic_bn, "ic_block")
    partial = te.compute(
        (n, ic_chunk // chunk, oc_chunk, h * w, oc_bn),
        lambda b, c, oc, p, ob: te.sum(
            data[b, c * chunk + ici, p // w, p % w, icb].astype(out_dtype)
            * kernel[oc, c * chunk + ici, 0, 0, icb, ob].astype(out_dtype),
            axis=[ici, icb],
        ),
        name="conv2d_1x1_partial",
        tag=tag.CONV2D_1X1_PARTIAL,
    )

    def total(b, oc, y, x, ob):  # a balanced sum: its depth grows with log2(chunks)
        terms = [partial[b, c, oc, y * w + x, ob] for c in range(ic_chunk // chunk)]
        while len(terms) > 1:
            pairs = len(terms) // 2
            terms = [terms[2 * i] + terms[2 * i + 1] for i in range(pairs)] + terms[2 * pairs :]
        return terms[0]

    return te.compute(
        (n, oc_chunk, h, w, oc_bn), total, name="conv2d_1x1_NCHWc", tag=tag.CONV2D_1X1
    )
