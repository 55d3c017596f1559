"""Resize (ONNX): nearest or (multi)linear interpolation over every axis, with the common
coordinate transformations. The source coordinate of each output index is computed in float32
in the kernel (exact for the power-of-two and integer scales networks use)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from ...tir import expr as E
from .. import tag

COORDINATE_MODES = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source(i: E.Expr, out: int, size: int, scale: float, mode: str) -> E.Expr:
    """The input coordinate (float32) of output index `i` along one axis."""
    x = te.cast(i, "float32")
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and out > 1):
        return (x + 0.5) / scale - 0.5
    if mode == "align_corners" and out > 1:
        return x * ((size - 1) / (out - 1))
    if mode in ("pytorch_half_pixel", "align_corners"):
        return te.const(0.0, "float32")
    if mode == "asymmetric":
        return x / scale
    return (x + 0.5) / scale  # tf_half_pixel_for_nn


def _nearest(x: E.Expr, mode: str) -> E.Expr:
    if mode == "floor":
        return te.floor(x)
    if mode == "ceil":
        return te.ceil(x)
    tie = x - te.floor(x) == 0.5
    return te.select(tie, te.floor(x) if mode == "round_prefer_floor" else te.ceil(x), te.round(x))


def _index(x: E.Expr, size: int) -> E.Expr:
    return te.max(te.min(te.cast(x, "int32"), size - 1), 0)


def resize(
    data: Tensor,
    sizes: Sequence[int],
    scales: Sequence[float],
    mode: str = "nearest",
    coordinate_mode: str = "half_pixel",
    nearest_mode: str = "round_prefer_floor",
) -> Tensor:
    """data resized to `sizes` (with the given per-axis `scales` for the coordinate maps)."""
    if mode not in ("nearest", "linear"):
        raise OperatorError(f"resize: mode {mode!r} (expected 'nearest' or 'linear')")
    if coordinate_mode not in COORDINATE_MODES:
        raise OperatorError(f"resize: coordinate_transformation_mode {coordinate_mode!r}")
    if mode == "nearest" and nearest_mode not in NEAREST_MODES:
        raise OperatorError(f"resize: nearest_mode {nearest_mode!r}")
    moved = [
        a
        for a, (n, size, sc) in enumerate(zip(sizes, data.shape, scales, strict=True))
        if not (n == size and sc == 1.0)
    ]

    def fcompute(*i):
        src = {a: _source(i[a], sizes[a], data.shape[a], scales[a], coordinate_mode) for a in moved}
        if mode == "nearest":
            index = list(i)
            for a in moved:
                index[a] = _index(_nearest(src[a], nearest_mode), data.shape[a])
            return data(*index)
        # linear: a weighted sum over the 2**len(moved) corners
        total = None
        for corner in range(1 << len(moved)):
            index, weight = list(i), None
            for k, a in enumerate(moved):
                size = data.shape[a]
                x = te.min(te.max(src[a], 0.0), float(size - 1))
                lo = te.floor(x)
                frac = x - lo
                hi = (corner >> k) & 1
                index[a] = te.min(_index(lo, size) + hi, size - 1)
                w = frac if hi else 1.0 - frac
                weight = w if weight is None else weight * w
            term = data(*index) * weight if weight is not None else data(*index)
            total = term if total is None else total + term
        return total

    return te.compute(tuple(int(n) for n in sizes), fcompute, name="resize", tag=tag.INJECTIVE)
