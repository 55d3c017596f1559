"""Reductions over axes: sum, mean and max (ONNX ReduceSum, ReduceMean, ReduceMax)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag

KINDS = ("sum", "mean", "max")


def reduce(data: Tensor, kind: str, axes: Sequence[int] | None, keepdims: bool = True) -> Tensor:
    """data reduced by `kind` over `axes` (None: all), keeping them as 1s with `keepdims`."""
    if kind not in KINDS:
        raise OperatorError(f"reduce: kind {kind!r} (expected one of {', '.join(KINDS)})")
    axes = sorted({a % data.ndim for a in (range(data.ndim) if axes is None else axes)})
    rs = [te.reduce_axis(data.shape[a], f"r{a}") for a in axes]
    kept = [a for a in range(data.ndim) if a not in axes]
    shape = (
        [1 if a in axes else n for a, n in enumerate(data.shape)]
        if keepdims
        else [data.shape[a] for a in kept]
    )

    def source(*i):
        index = list(i) if keepdims else [None] * data.ndim
        if not keepdims:
            for k, a in enumerate(kept):
                index[a] = i[k]
        for r, a in zip(rs, axes, strict=True):
            index[a] = r
        return data(*index)

    reducer = te.max if kind == "max" else te.sum
    out = te.compute(
        tuple(shape),
        lambda *i: reducer(source(*i), axis=rs),
        name=f"reduce_{kind}",
        tag=tag.COMM_REDUCE,
    )
    if kind != "mean":
        return out
    count = float(np.prod([data.shape[a] for a in axes]))
    return te.compute(out.shape, lambda *i: out(*i) / count, name="reduce_mean", tag=tag.INJECTIVE)
