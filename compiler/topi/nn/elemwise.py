"""Activations and bias addition."""

from __future__ import annotations

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag


def relu(x: Tensor) -> Tensor:
    """max(x, 0)."""
    return te.compute(
        x.shape, lambda *i: te.max(x(*i), te.const(0, x.dtype)), name="relu", tag=tag.ELEMWISE
    )


def leaky_relu(x: Tensor, alpha: float) -> Tensor:
    """x where x > 0, else alpha * x."""

    def f(*i):
        v = x(*i)
        return te.select(v > 0, v, v * te.const(alpha, x.dtype))

    return te.compute(x.shape, f, name="leaky_relu", tag=tag.ELEMWISE)


def bias_add(data: Tensor, bias: Tensor, axis: int = 1) -> Tensor:
    """data + bias, the 1-d bias running along `axis` of data."""
    axis = axis % data.ndim
    if bias.shape != (data.shape[axis],):
        raise OperatorError(
            f"bias_add: bias shape {bias.shape} must be ({data.shape[axis]},) for axis {axis} "
            f"of data {data.shape}"
        )
    return te.compute(
        data.shape, lambda *i: data(*i) + bias(i[axis]), name="bias_add", tag=tag.BROADCAST
    )
