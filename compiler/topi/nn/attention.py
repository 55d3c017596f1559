"""Scaled dot-product attention as tensor expressions: softmax(q k * scale + mask) v over the
last axis of the scores, computed stably (each row's maximum subtracted first)."""

from __future__ import annotations

import math

from ... import te
from ...te.tensor import Tensor
from .. import tag

_PARTS = 16  # a row's maximum and sum first as this many partial ones (a vector's lanes)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """q [..., Tq, D], k [..., D, Tk] (the keys transposed), v [..., Tk, Dv] with equal leading
    axes; `mask` broadcasts to the scores [..., Tq, Tk]. Stages (named `T_attention_*`): the
    scores (a reduction over D), their row maximum (`max_part`: the maximum of each of
    gcd(Tk, 16) interleaved parts of the row, so a vector's lanes reduce side by side, then
    `max` of those), the exponentials of the scores less it (`te.fast_exp`), their row sum
    (`sum_part`, `sum` alike), the exponentials times v (a reduction over Tk), and the output
    (that product over the sum), tagged `tag.ATTENTION`."""
    *batch, tq, d = q.shape
    tk, dv = k.shape[-1], v.shape[-1]
    shape = (*batch, tq, tk)
    r = te.reduce_axis(d, "d")
    scores = te.compute(
        shape,
        lambda *i: te.sum(q(*i[:-1], r) * k(*i[:-2], r, i[-1]), axis=r),
        name="T_attention_scores",
    )

    def logit(*i):
        s = scores(*i) * scale
        if mask is None:
            return s
        lead = i[len(i) - mask.ndim :]
        return s + mask(*(x if n > 1 else 0 for x, n in zip(lead, mask.shape, strict=True)))

    parts = math.gcd(tk, _PARTS)
    rows = shape[:-1]

    def row_reduce(f, body, name: str) -> Tensor:
        j, p = te.reduce_axis(tk // parts, f"{name}_j"), te.reduce_axis(parts, f"{name}_p")
        part = te.compute(
            (*rows, parts),
            lambda *i: f(body(*i[:-1], j * parts + i[-1]), axis=j),
            name=f"T_attention_{name}_part",
        )
        return te.compute(rows, lambda *i: f(part(*i, p), axis=p), name=f"T_attention_{name}")

    top = row_reduce(te.max, logit, "max")
    exp = te.compute(
        shape, lambda *i: te.fast_exp(logit(*i) - top(*i[:-1])), name="T_attention_exp"
    )
    total = row_reduce(te.sum, exp, "sum")
    j = te.reduce_axis(tk, "j")
    context = te.compute(
        (*rows, dv),
        lambda *i: te.sum(exp(*i[:-1], j) * v(*i[:-2], j, i[-1]), axis=j),
        name="T_attention_context",
    )
    return te.compute(
        (*rows, dv),
        lambda *i: context(*i) / total(*i[:-1]),
        name="T_attention",
        tag=tag.ATTENTION,
    )
