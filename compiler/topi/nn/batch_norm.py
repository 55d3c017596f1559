"""Inference batch normalization (moving statistics)."""

from __future__ import annotations

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag


def batch_norm(
    data: Tensor,
    gamma: Tensor,
    beta: Tensor,
    moving_mean: Tensor,
    moving_var: Tensor,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Tensor:
    """(data - mean) / sqrt(var + epsilon) * gamma + beta, per channel along `axis`."""
    axis = axis % data.ndim
    c = data.shape[axis]
    for name, t in (("gamma", gamma), ("beta", beta), ("mean", moving_mean), ("var", moving_var)):
        if t.shape != (c,):
            raise OperatorError(f"batch_norm: {name} has shape {t.shape}, expected ({c},)")

    def f(*i):
        ch = i[axis]
        eps = te.const(epsilon, data.dtype)
        out = (data(*i) - moving_mean(ch)) / te.sqrt(moving_var(ch) + eps)
        if scale:
            out = out * gamma(ch)
        return out + beta(ch) if center else out

    return te.compute(data.shape, f, name="batch_norm", tag=tag.BROADCAST)
