"""Injective data movement: reshape, transpose, concatenate, and the NCHW <-> NCHW[x]c layout
transforms; clip. Each is one compute that the x86 injective schedule parallelizes and that
fuses into a consumer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from ...tir import expr as E
from .. import tag


def _unravel(flat: E.Expr, shape: Sequence[int]) -> list[E.Expr]:
    """The index into `shape` of a row-major flat position."""
    out: list[E.Expr] = []
    for n in reversed(shape):
        out.append(E.FloorMod(flat, n) if n != 1 else E.const(0))
        flat = E.FloorDiv(flat, n)
    return out[::-1]


def reshape(data: Tensor, shape: Sequence[int]) -> Tensor:
    """data with a new shape of as many elements (row-major order, as numpy)."""
    shape = tuple(int(n) for n in shape)
    if int(np.prod(shape)) != int(np.prod(data.shape)):
        raise OperatorError(f"reshape: cannot reshape {data.shape} into {shape}")
    if shape == data.shape:
        return data

    def f(*i):
        flat = E.const(0)
        for k, n in zip(i, shape, strict=True):
            flat = flat * n + k
        return data(*_unravel(flat, data.shape))

    return te.compute(shape, f, name="reshape", tag=tag.INJECTIVE)


def transpose(data: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """data with its axes permuted (default: reversed), as numpy.transpose."""
    axes = list(range(data.ndim))[::-1] if axes is None else [a % data.ndim for a in axes]
    if sorted(axes) != list(range(data.ndim)):
        raise OperatorError(f"transpose: axes {axes} are not a permutation of {data.ndim} axes")
    shape = tuple(data.shape[a] for a in axes)

    def f(*i):
        src: list[E.Expr] = [E.const(0)] * data.ndim
        for out_axis, a in enumerate(axes):
            src[a] = i[out_axis]
        return data(*src)

    return te.compute(shape, f, name="transpose", tag=tag.INJECTIVE)


def concatenate(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors joined along `axis` (the other extents equal)."""
    axis = axis % tensors[0].ndim
    rest = [t.shape[:axis] + t.shape[axis + 1 :] for t in tensors]
    if any(r != rest[0] for r in rest):
        raise OperatorError(
            f"concatenate: shapes {[t.shape for t in tensors]} differ off axis {axis}"
        )
    starts = np.cumsum([0] + [t.shape[axis] for t in tensors]).tolist()
    shape = (*tensors[0].shape[:axis], starts[-1], *tensors[0].shape[axis + 1 :])

    def f(*i):
        k = i[axis]

        def part(first: int, end: int):  # the last of parts [first, end) whose start k passed
            if end - first == 1:
                return tensors[first](*i[:axis], k - starts[first], *i[axis + 1 :])
            mid = (first + end) // 2  # a binary search: the select nests log2(parts) deep
            return te.if_then_else(k >= starts[mid], part(mid, end), part(first, mid))

        return part(0, len(tensors))

    return te.compute(shape, f, name="concatenate", tag=tag.INJECTIVE)


def pack_nchwc(data: Tensor, bn: int) -> Tensor:
    """[N, C, H, W] -> [N, C / bn, H, W, bn] (C divisible by bn)."""
    n, c, h, w = data.shape
    if c % bn:
        raise OperatorError(f"pack_nchwc: {c} channels do not split into blocks of {bn}")
    return te.compute(
        (n, c // bn, h, w, bn),
        lambda b, cc, y, x, cb: data[b, cc * bn + cb, y, x],
        name="pack_nchwc",
        tag=tag.INJECTIVE,
    )


def unpack_nchwc(data: Tensor) -> Tensor:
    """[N, C / bn, H, W, bn] -> [N, C, H, W]."""
    n, cc, h, w, bn = data.shape
    return te.compute(
        (n, cc * bn, h, w),
        lambda b, c, y, x: data[b, c // bn, y, x, c % bn],
        name="unpack_nchwc",
        tag=tag.INJECTIVE,
    )


def repack_nchwc(data: Tensor, bn: int) -> Tensor:
    """[N, C / b, H, W, b] -> [N, C / bn, H, W, bn] (another channel block)."""
    n, cc, h, w, b = data.shape
    if (cc * b) % bn:
        raise OperatorError(f"repack_nchwc: {cc * b} channels do not split into blocks of {bn}")
    return te.compute(
        (n, cc * b // bn, h, w, bn),
        lambda i, c, y, x, k: data[i, (c * bn + k) // b, y, x, (c * bn + k) % b],
        name="repack_nchwc",
        tag=tag.INJECTIVE,
    )


def clip(data: Tensor, lo: float | None, hi: float | None) -> Tensor:
    """data limited to [lo, hi] (None: no limit on that side)."""

    def f(*i):
        v = data(*i)
        if lo is not None:
            v = te.max(v, te.const(lo, data.dtype))
        if hi is not None:
            v = te.min(v, te.const(hi, data.dtype))
        return v

    return te.compute(data.shape, f, name="clip", tag=tag.ELEMWISE)
