"""Scaled dot-product attention as tensor expressions: softmax(q k * scale + mask) v over the
last axis of the scores, computed stably (each row's maximum subtracted first, so the
exponentials' arguments are never positive: `exp_nonpositive`)."""

from __future__ import annotations

import math

from ... import te
from ...te.tensor import Tensor
from .. import tag

_EXP_SQUARINGS = 8  # exp(x) = exp(x / 256) ** 256
_EXP_TAYLOR = 7  # terms of exp(y) for |y| <= 87 / 256
_EXP_MIN = -87.0  # below it exp(x) is 0 (float32's normal range ends at -87.3)


def exp_nonpositive(x: Tensor, name: str) -> Tensor:
    """exp(x) for x <= 0 by arithmetic alone, so loops over it stay vectorized (libm's expf is
    a scalar call per lane): a Taylor polynomial of x / 256 (stage `{name}_taylor`) raised to
    the 256th power by eight squarings (stages `{name}_square{n}`: an expression squared in
    place would hold 256 copies of the polynomial); within 3.2e-5 of exp(x) relatively, 0
    below `_EXP_MIN`, NaN to NaN (stage `name`)."""

    def taylor(*i):
        y = x(*i) * (1.0 / 2**_EXP_SQUARINGS)
        p = te.const(1.0 / math.factorial(_EXP_TAYLOR), x.dtype)
        for n in range(_EXP_TAYLOR - 1, -1, -1):
            p = p * y + 1.0 / math.factorial(n)
        return p

    p = te.compute(x.shape, taylor, name=f"{name}_taylor")
    for n in range(_EXP_SQUARINGS):
        p = te.compute(x.shape, lambda *i, p=p: p(*i) * p(*i), name=f"{name}_square{n}")
    low, zero = te.const(_EXP_MIN, x.dtype), te.const(0.0, x.dtype)
    return te.compute(x.shape, lambda *i: te.select(x(*i) < low, zero, p(*i)), name=name)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """q [..., Tq, D], k [..., D, Tk] (the keys transposed), v [..., Tk, Dv] with equal leading
    axes; `mask` broadcasts to the scores [..., Tq, Tk]. Stages (named `T_attention_*`): the
    scores (a reduction over D), their row maximum, the scores less it, their exponentials,
    row sum, the exponentials times v (a reduction over Tk), and the output (that product over
    the sum), tagged `tag.ATTENTION`."""
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

    j1, j2, j3 = (te.reduce_axis(tk, f"j{n}") for n in (1, 2, 3))
    rows = shape[:-1]
    top = te.compute(rows, lambda *i: te.max(logit(*i, j1), axis=j1), name="T_attention_max")
    shifted = te.compute(shape, lambda *i: logit(*i) - top(*i[:-1]), name="T_attention_shifted")
    exp = exp_nonpositive(shifted, "T_attention_exp")
    total = te.compute(rows, lambda *i: te.sum(exp(*i, j2), axis=j2), name="T_attention_sum")
    context = te.compute(
        (*rows, dv),
        lambda *i: te.sum(exp(*i[:-1], j3) * v(*i[:-2], j3, i[-1]), axis=j3),
        name="T_attention_context",
    )
    return te.compute(
        (*rows, dv),
        lambda *i: context(*i) / total(*i[:-1]),
        name="T_attention",
        tag=tag.ATTENTION,
    )
