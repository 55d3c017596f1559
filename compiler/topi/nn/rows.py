"""Reductions along the last axis of rows, first as interleaved partial ones, so a schedule
reduces a vector's lanes side by side (a scalar chain of adds waits on each add's latency), and
the layer normalization made of them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ... import te
from ...te.tensor import Tensor
from .. import tag

PARTS = 16  # partial reductions of a row: a vector's lanes (one AVX-512 or two AVX2 vectors)


def row_reduce(
    reducer: Callable[..., Any], body: Callable[..., Any], rows: tuple, n: int, name: str
) -> Tensor:
    """reducer(body(*row, j) over j < n) for each row index of `rows`: stage `{name}_part`
    holds gcd(n, PARTS) partial reductions per row (part p of elements j = p mod parts), stage
    `name` reduces them."""
    parts = math.gcd(n, PARTS)
    j, p = te.reduce_axis(n // parts, f"{name}_j"), te.reduce_axis(parts, f"{name}_p")
    part = te.compute(
        (*rows, parts),
        lambda *i: reducer(body(*i[:-1], j * parts + i[-1]), axis=j),
        name=f"{name}_part",
    )
    return te.compute(rows, lambda *i: reducer(part(*i, p), axis=p), name=name)


def layer_norm(x: Tensor, epsilon: float) -> Tensor:
    """(x - mean) / sqrt(variance + epsilon), the statistics over the last axis (stages
    `norm_sum` and `norm_squares` by `row_reduce`, the squares about the mean; `norm_inverse`,
    a row's 1 / sqrt(variance + epsilon), tagged `tag.NORMALIZE`; the output `normalize`,
    injective)."""
    *rows, n = x.shape
    total = row_reduce(te.sum, x, tuple(rows), n, "norm_sum")

    def centered(*i):
        return x(*i) - total(*i[:-1]) * (1.0 / n)

    squares = row_reduce(
        te.sum, lambda *i: centered(*i) * centered(*i), tuple(rows), n, "norm_squares"
    )
    inverse = te.compute(
        tuple(rows),
        lambda *i: 1.0 / te.sqrt(squares(*i) * (1.0 / n) + epsilon),
        name="norm_inverse",
        tag=tag.NORMALIZE,
    )
    return te.compute(
        x.shape,
        lambda *i: centered(*i) * inverse(*i[:-1]),
        name="normalize",
        tag=tag.INJECTIVE,
    )
