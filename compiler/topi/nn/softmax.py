"""Softmax and log-softmax along one axis, computed stably (the maximum is subtracted first)."""

from __future__ import annotations

from ... import te
from ...te.tensor import Tensor
from .. import tag


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    return _softmax(x, axis, log=False)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """x - max - log(sum(exp(x - max))) along `axis`."""
    return _softmax(x, axis, log=True)


def _softmax(x: Tensor, axis: int, log: bool) -> Tensor:
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
    if log:

        def norm(*i):
            row = (*i[:axis], *i[axis + 1 :])
            return x(*i) - max_elem(*row) - te.log(expsum(*row))

    else:

        def norm(*i):
            return exp(*i) / expsum(*i[:axis], *i[axis + 1 :])

    return te.compute(
        shape,
        norm,
        name="T_softmax_norm",
        tag=tag.SOFTMAX,
        attrs={"axis": axis},
    )
