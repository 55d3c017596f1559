"""Scaled dot-product attention as tensor expressions: softmax(q k * scale + mask) v over the
last axis of the scores, computed stably (each row's maximum subtracted first)."""

from __future__ import annotations

from ... import te
from ...te.tensor import Tensor
from .. import tag
from .rows import row_reduce


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """q [..., Tq, D], k [..., D, Tk] (the keys transposed), v [..., Tk, Dv] with equal leading
    axes; `mask` broadcasts to the scores [..., Tq, Tk]. Stages (named `T_attention_*`): the
    scores (a reduction over D), their row maximum (`max_part` and `max`: `rows.row_reduce`),
    the exponentials of the scores less it (`te.fast_exp`), their row sum (`sum_part`,
    `sum`) and its reciprocal (`inverse`), the exponentials times v (a reduction over Tk), and
    the output (that product times the reciprocal), tagged `tag.ATTENTION`."""
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

    rows = shape[:-1]
    top = row_reduce(te.max, logit, rows, tk, "T_attention_max")
    exp = te.compute(
        shape, lambda *i: te.fast_exp(logit(*i) - top(*i[:-1])), name="T_attention_exp"
    )
    total = row_reduce(te.sum, exp, rows, tk, "T_attention_sum")
    j = te.reduce_axis(tk, "j")
    context = te.compute(
        (*rows, dv),
        lambda *i: te.sum(exp(*i[:-1], j) * v(*i[:-2], j, i[-1]), axis=j),
        name="T_attention_context",
    )
    inverse = te.compute(rows, lambda *i: 1.0 / total(*i), name="T_attention_inverse")
    return te.compute(
        (*rows, dv),
        lambda *i: context(*i) * inverse(*i[:-1]),
        name="T_attention",
        tag=tag.ATTENTION,
    )
