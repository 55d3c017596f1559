"""Graph operators computed point by point, for `build_ops.OPS`: elementwise math and
activations (`UNARY`, one scalar function each), Cast, IsInf, Pow's float exponent and the
index lookups Gather and GatherElements, whose indices are range-checked, and OneHot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import te, topi
from ..te.tensor import Tensor
from ..tir import expr as E
from ..topi import nn, tag

Compute = Callable[[list[Tensor], dict[str, Any]], Tensor]


def power(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Pow: a float base raised to the exponent as the base's dtype; an integer base in
    float64, the result rounded back (exact while it fits float64's 53 bits)."""
    base, exponent = ins
    if base.dtype.startswith("float"):
        return topi.power(base, _as(exponent, base.dtype))
    wide = topi.power(_as(base, "float64"), _as(exponent, "float64"))
    return te.compute(
        wide.shape, lambda *i: te.cast(te.nearbyint(wide(*i)), base.dtype), "pow", tag.ELEMWISE
    )


def _as(t: Tensor, dtype: str) -> Tensor:
    """t, or its values cast to `dtype`."""
    if t.dtype == dtype:
        return t
    return te.compute(t.shape, lambda *i: te.cast(t(*i), dtype), f"to_{dtype}", tag.ELEMWISE)


def hard_sigmoid(x: Tensor, alpha: float, beta: float) -> Tensor:
    return nn.clip(topi.add(topi.multiply(x, alpha), beta), 0.0, 1.0)


Scalar = Callable[[E.Expr, dict[str, Any]], E.Expr]


def _softplus(x: E.Expr) -> E.Expr:
    """log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))."""
    return E.Max(x, te.const(0.0, x.dtype)) + te.log(1.0 + te.exp(-te.abs(x)))


def _gelu(x: E.Expr, approximate: str) -> E.Expr:
    """ONNX Gelu: x/2 (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi) (x + 0.044715 x^3))."""
    if approximate == "tanh":
        inner = te.tanh(float(np.sqrt(2 / np.pi)) * (x + 0.044715 * x * x * x))
    else:
        inner = te.fast_erf(x * float(1 / np.sqrt(2)))
    return 0.5 * x * (1.0 + inner)


def _sign(x: E.Expr) -> E.Expr:
    zero = te.const(0.0, x.dtype)
    return te.select(x > zero, 1.0, te.select(x < zero, -1.0, zero))


def _elu(x: E.Expr, alpha: float) -> E.Expr:
    return te.select(x > te.const(0.0, x.dtype), x, alpha * (te.exp(x) - 1.0))


def _celu(x: E.Expr, alpha: float) -> E.Expr:
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    zero = te.const(0.0, x.dtype)
    return E.Max(x, zero) + E.Min(zero, alpha * (te.exp(x / alpha) - 1.0))


# elementwise operators of one input: the output value from the input's and the attributes
UNARY: dict[str, Scalar] = {
    "Abs": lambda x, a: te.abs(x),
    "Neg": lambda x, a: -x,
    "Exp": lambda x, a: te.exp(x),
    "Log": lambda x, a: te.log(x),
    "Sqrt": lambda x, a: te.sqrt(x),
    "Reciprocal": lambda x, a: 1.0 / x,
    "Erf": lambda x, a: te.fast_erf(x),
    "Sin": lambda x, a: te.sin(x),
    "Cos": lambda x, a: te.cos(x),
    "Tan": lambda x, a: te.tan(x),
    "Asin": lambda x, a: te.asin(x),
    "Acos": lambda x, a: te.acos(x),
    "Atan": lambda x, a: te.atan(x),
    "Sinh": lambda x, a: te.sinh(x),
    "Cosh": lambda x, a: te.cosh(x),
    "Asinh": lambda x, a: te.asinh(x),
    "Acosh": lambda x, a: te.acosh(x),
    "Atanh": lambda x, a: te.atanh(x),
    "Floor": lambda x, a: te.floor(x),
    "Ceil": lambda x, a: te.ceil(x),
    "Round": lambda x, a: te.nearbyint(x),
    "Sign": lambda x, a: _sign(x),
    "Elu": lambda x, a: _elu(x, float(a["alpha"])),
    "Selu": lambda x, a: float(a["gamma"]) * _elu(x, float(a["alpha"])),
    "Celu": lambda x, a: _celu(x, float(a["alpha"])),
    "ThresholdedRelu": lambda x, a: te.select(x > float(a["alpha"]), x, te.const(0.0, x.dtype)),
    "Softplus": lambda x, a: _softplus(x),
    "Softsign": lambda x, a: x / (1.0 + te.abs(x)),
    "Mish": lambda x, a: x * te.tanh(_softplus(x)),
    "Gelu": lambda x, a: _gelu(x, a["approximate"]),
}


def cast(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Cast: to bool a value is whether it is nonzero; floats to integers truncate."""
    x, to = ins[0], attrs["to"]
    if to == "bool":
        return te.compute(x.shape, lambda *i: x(*i) != E.convert(0, x(*i)), "cast", tag.ELEMWISE)
    return te.compute(x.shape, lambda *i: te.cast(x(*i), to), name="cast", tag=tag.ELEMWISE)


def checked_index(index: E.Expr, data: Tensor, ax: int) -> E.Expr:
    """An index read from a tensor into `data`'s axis `ax` (negative ones counting from the
    end); one outside the axis becomes an index past the data, which the bounds-checked load
    refuses (recorded for the executor to raise) instead of reading another element."""
    n, past = data.shape[ax], int(np.prod(data.shape))  # any index `past` lies outside
    i = te.cast(index, "int64")
    i = te.select(i < 0, i + n, i)
    i = te.select(te.all(i >= 0, i < n), i, te.const(past, "int64"))
    return te.cast(i, "int32") if past < 2**31 else i  # int32 indices reach every element


def gather(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Gather along `axis` by an index tensor (computed or constant), indices checked
    (`checked_index`)."""
    data, indices, ax = ins[0], ins[1], int(attrs["axis"])
    k = indices.ndim

    def f(*o):
        i = checked_index(indices(*o[ax : ax + k]), data, ax)
        return data(*o[:ax], i, *o[ax + k :])

    shape = (*data.shape[:ax], *indices.shape, *data.shape[ax + 1 :])
    return te.compute(shape, f, name="gather", tag=tag.INJECTIVE)


def gather_elements(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX GatherElements: the output indexes the data as the indices' own position, but
    along `axis` by the index it holds (checked: `checked_index`)."""
    data, indices, ax = ins[0], ins[1], int(attrs["axis"])

    def f(*o):
        return data(*o[:ax], checked_index(indices(*o), data, ax), *o[ax + 1 :])

    return te.compute(indices.shape, f, name="gather_elements", tag=tag.INJECTIVE)


def one_hot(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX OneHot (`reference.one_hot`): values[1] where the index names the position along
    `axis`, else values[0]."""
    indices, values = ins
    ax, depth = int(attrs["axis"]), int(attrs["depth"])

    def f(*o):
        i = te.cast(indices(*o[:ax], *o[ax + 1 :]), "int64")
        i = te.select(i < 0, i + depth, i)
        return te.select(i == te.cast(o[ax], "int64"), values(1), values(0))

    shape = (*indices.shape[:ax], depth, *indices.shape[ax:])
    return te.compute(shape, f, name="one_hot", tag=tag.INJECTIVE)


def is_inf(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX IsInf: +inf where `detect_positive`, -inf where `detect_negative`."""
    x = ins[0]
    signs = [s for s, key in ((1, "detect_positive"), (-1, "detect_negative")) if attrs[key]]

    def f(*i):
        v = x(*i)
        hits = [v == E.convert(s * float("inf"), v) for s in signs]
        return te.any(*hits) if hits else E.const(False, "bool")

    return te.compute(x.shape, f, name="isinf", tag=tag.ELEMWISE)


def elementwise(op: str) -> Compute:
    """The compute of the UNARY operator `op` (fuses as elementwise)."""
    fn = UNARY[op]
    return lambda ins, attrs: te.compute(
        ins[0].shape, lambda *i: fn(ins[0](*i), attrs), name=op.lower(), tag=tag.ELEMWISE
    )
