"""Max and average pooling over windows, and global pooling over H and W, on NCHW and on the
packed NCHW[x]c layout (a trailing channel-block axis)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from ...tir import expr as E
from .. import tag
from ..window import get_pad_tuple, out_size, pair
from .pad import pad_hw


def _valid(start: E.Expr, size: int, kernel: int, dil: int) -> E.Expr:
    """How many of the window taps start + r * dil (r < kernel) fall inside [0, size)."""
    first = te.max(E.FloorDiv(-start + dil - 1, dil), 0)
    last = te.min(E.FloorDiv(size - 1 - start, dil), kernel - 1)
    return te.max(last - first + 1, 0)


def _packed(data: Tensor, layout: str, op: str) -> bool:
    """True for NCHW[x]c (5-d), False for NCHW (4-d); anything else is an error."""
    packed = layout.startswith("NCHW") and layout.endswith("c") and layout != "NCHW"
    if layout != "NCHW" and not packed:
        raise OperatorError(f"{op}: layout {layout!r} is not supported; use 'NCHW' or 'NCHWc'")
    if data.ndim != (5 if packed else 4):
        raise OperatorError(
            f"{op}: a {layout} tensor has {5 if packed else 4} axes, got {data.shape}"
        )
    return packed


def pool2d(
    data: Tensor,
    kernel: Any,
    stride: Any,
    dilation: Any,
    padding: Any,
    pool_type: str,
    ceil_mode: bool = False,
    layout: str = "NCHW",
    count_include_pad: bool = True,
) -> Tensor:
    """Max or average over kernel windows of an NCHW or NCHW[x]c tensor."""
    _packed(data, layout, "pool2d")
    if pool_type not in ("max", "avg"):
        raise OperatorError(f"pool2d: pool_type {pool_type!r}: expected 'max' or 'avg'")
    h, w = data.shape[2:4]
    (kh, kw), (sh, sw), (dh, dw) = pair(kernel), pair(stride), pair(dilation)
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw))
    oh = out_size(h, kh, sh, dh, top + bottom)
    ow = out_size(w, kw, sw, dw, left + right)
    padded_h, padded_w = h + top + bottom, w + left + right  # what count_include_pad counts
    if ceil_mode:  # one more window wherever a partial one remains, unless it would start in
        # the bottom/right padding (as ONNX and PyTorch); pad the bottom/right for it
        oh = -(-(h + top + bottom - (kh - 1) * dh - 1) // sh) + 1
        ow = -(-(w + left + right - (kw - 1) * dw - 1) // sw) + 1
        oh -= (oh - 1) * sh >= h + top
        ow -= (ow - 1) * sw >= w + left
        bottom = max(bottom, (oh - 1) * sh + (kh - 1) * dh + 1 - h - top)
        right = max(right, (ow - 1) * sw + (kw - 1) * dw + 1 - w - left)
    is_max = pool_type == "max"
    fill = te.min_value(data.dtype) if is_max else 0.0
    dpad = pad_hw(data, 2, (top, left, bottom, right), fill)
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    reducer = te.max if is_max else te.sum
    shape = (*data.shape[:2], oh, ow, *data.shape[4:])
    pooled = te.compute(
        shape,
        lambda *i: reducer(
            dpad[(*i[:2], i[2] * sh + ry * dh, i[3] * sw + rx * dw, *i[4:])], axis=[ry, rx]
        ),
        name=f"pool_{'max' if is_max else 'sum'}",
        tag=tag.POOL,
    )
    if is_max:
        return pooled

    def average(*i):
        if count_include_pad:  # the explicit padding counts, a ceil_mode overhang does not
            count = _valid(i[2] * sh, padded_h, kh, dh) * _valid(i[3] * sw, padded_w, kw, dw)
        else:
            count = _valid(i[2] * sh - top, h, kh, dh) * _valid(i[3] * sw - left, w, kw, dw)
        return pooled(*i) / te.cast(count, data.dtype)

    return te.compute(shape, average, name="pool_avg", tag=tag.ELEMWISE)


def global_pool(data: Tensor, pool_type: str, layout: str = "NCHW") -> Tensor:
    """Max or average over all of H and W: [N, C, H, W(, c)] -> [N, C, 1, 1(, c)]."""
    _packed(data, layout, "global_pool")
    if pool_type not in ("max", "avg"):
        raise OperatorError(f"global_pool: pool_type {pool_type!r}: expected 'max' or 'avg'")
    h, w = data.shape[2:4]
    shape = (*data.shape[:2], 1, 1, *data.shape[4:])
    ry, rx = te.reduce_axis(h, "ry"), te.reduce_axis(w, "rx")
    if pool_type == "max":
        return te.compute(
            shape,
            lambda *i: te.max(data[(*i[:2], ry, rx, *i[4:])], axis=[ry, rx]),
            name="global_pool_max",
            tag=tag.POOL,
        )
    total = te.compute(
        shape,
        lambda *i: te.sum(data[(*i[:2], ry, rx, *i[4:])], axis=[ry, rx]),
        name="global_pool_sum",
        tag=tag.POOL,
    )
    return te.compute(
        shape,
        lambda *i: total(*i) / te.const(h * w, data.dtype),
        name="global_pool_avg",
        tag=tag.ELEMWISE,
    )
