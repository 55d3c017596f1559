"""Softmax along one axis, computed stably (the maximum is subtracted first)."""

from __future__ import annotations

from ... import te
from ...te.tensor import Tensor
from .. import tag


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    axis = axis % x.ndim
    shape = x.shape
    outer = shape[:axis] + shape[axis + 1 :]

    def at(index, r):
        return (*index[:axis], r, *index[axis:])

    k1, k2 = te.reduce_axis(shape[axis], "k1"), te.reduce_axis(shape[axis], "k2")
    max_elem = te.compute(
        outer, lambda *i: te.max(x(*at(i, k1)), axis=k1), name="T_softmax_maxelem"
    )
    exp = te.compute(
        shape,
        lambda *i: te.exp(x(*i) - max_elem(*i[:axis], *i[axis + 1 :])),
        name="T_softmax_exp",
    )
    expsum = te.compute(outer, lambda *i: te.sum(exp(*at(i, k2)), axis=k2), name="T_softmax_expsum")
    return te.compute(
        shape,
        lambda *i: exp(*i) / expsum(*i[:axis], *i[axis + 1 :]),
        name="T_softmax_norm",
        tag=tag.SOFTMAX,
        attrs={"axis": axis},
    )
