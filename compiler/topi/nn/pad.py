"""Constant padding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from ...tir import expr as E
from .. import tag
from ..window import get_pad_tuple, out_size, pair


def pad(
    data: Tensor,
    pad_before: Sequence[int],
    pad_after: Sequence[int] | None = None,
    pad_value: float | E.Expr = 0.0,
    name: str = "PadInput",
) -> Tensor:
    """data with pad_before[k] / pad_after[k] elements of pad_value added around axis k."""
    pad_after = pad_before if pad_after is None else pad_after
    if not len(pad_before) == len(pad_after) == data.ndim:
        raise OperatorError(
            f"pad: {data.ndim}-d input needs {data.ndim} pad_before/pad_after entries, "
            f"got {len(pad_before)} and {len(pad_after)}"
        )
    if not any(pad_before) and not any(pad_after):
        return data
    shape = [n + b + a for n, b, a in zip(data.shape, pad_before, pad_after, strict=True)]

    def fcompute(*index):
        conds = []
        for i, n, b, a in zip(index, data.shape, pad_before, pad_after, strict=True):
            conds += ([i >= b] if b else []) + ([i < n + b] if a else [])
        src = [i - b for i, b in zip(index, pad_before, strict=True)]
        return te.if_then_else(te.all(*conds), data(*src), te.const(pad_value, data.dtype))

    return te.compute(shape, fcompute, name=name, tag=tag.INJECTIVE)


def pad_hw(
    data: Tensor, h_axis: int, pads: tuple[int, int, int, int], pad_value: float | E.Expr = 0.0
) -> Tensor:
    """data padded by (top, left, bottom, right) on axes h_axis, h_axis + 1."""
    top, left, bottom, right = pads
    before = [0] * data.ndim
    after = [0] * data.ndim
    before[h_axis : h_axis + 2] = [top, left]
    after[h_axis : h_axis + 2] = [bottom, right]
    return pad(data, before, after, pad_value, name="data_pad")


def pad_window(
    data: Tensor, h_axis: int, kernel: tuple[int, int], stride: Any, padding: Any, dilation: Any
) -> tuple[Tensor, tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Pad `data` for a sliding window on axes h_axis, h_axis + 1: returns the padded tensor,
    the output extents (oh, ow), the strides and the dilations (shared by the convolutions)."""
    kh, kw = kernel
    (sh, sw), (dh, dw) = pair(stride), pair(dilation)
    pads = get_pad_tuple(padding, (kh, kw))
    h, w = data.shape[h_axis], data.shape[h_axis + 1]
    oh = out_size(h, kh, sh, dh, pads[0] + pads[2])
    ow = out_size(w, kw, sw, dw, pads[1] + pads[3])
    return pad_hw(data, h_axis, pads), (oh, ow), (sh, sw), (dh, dw)
