"""Matrix multiplication and fully connected layers."""

from __future__ import annotations

from ... import te
from ...errors import OperatorError
from ...te.tensor import Tensor
from .. import tag


def matmul(
    tensor_a: Tensor,
    tensor_b: Tensor,
    bias: Tensor | None = None,
    out_dtype: str | None = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> Tensor:
    """op(A) @ op(B) (+ bias along the last axis), op transposing when asked."""
    out_dtype = out_dtype or tensor_a.dtype
    m, ka = tensor_a.shape[::-1] if transpose_a else tensor_a.shape
    kb, n = tensor_b.shape[::-1] if transpose_b else tensor_b.shape
    if ka != kb:
        raise OperatorError(f"matmul: reduction extents differ: {ka} (A) and {kb} (B)")
    k = te.reduce_axis(ka, "k")

    def f(i, j):
        a = tensor_a[k, i] if transpose_a else tensor_a[i, k]
        b = tensor_b[j, k] if transpose_b else tensor_b[k, j]
        return te.sum(a.astype(out_dtype) * b.astype(out_dtype), axis=k)

    out = te.compute((m, n), f, name="T_matmul", tag=tag.MATMUL)
    return out if bias is None else add_bias(out, bias)


def dense(
    data: Tensor, weight: Tensor, bias: Tensor | None = None, out_dtype: str | None = None
) -> Tensor:
    """data [batch, in] times weight [out, in] transposed (+ bias [out])."""
    return matmul(data, weight, bias, out_dtype, transpose_b=True)


def add_bias(out: Tensor, bias: Tensor) -> Tensor:
    """out [m, n] + bias [n], tagged broadcast so schedules inline it."""
    if bias.shape != (out.shape[1],):
        raise OperatorError(f"bias has shape {bias.shape}, expected ({out.shape[1]},)")
    return te.compute(
        out.shape,
        lambda i, j: out[i, j] + bias[j].astype(out.dtype),
        name="T_add_bias",
        tag=tag.BROADCAST,
    )
