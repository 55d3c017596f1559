"""Binary operators with numpy broadcasting (operands are tensors or Python scalars)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..errors import OperatorError
from ..te.tensor import Tensor
from ..tir import expr as E
from . import tag


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy's broadcast result shape; raises ValueError naming the shapes if incompatible."""
    ndim = max(len(s) for s in shapes)
    out = []
    for k in range(ndim):
        dims = {s[k - ndim + len(s)] for s in shapes if k - ndim + len(s) >= 0} - {1}
        if len(dims) > 1:
            raise OperatorError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _broadcast_index(t: Tensor, index: Sequence[E.Expr]) -> E.Expr:
    """t at the output index: leading dims dropped, dims of extent 1 read at 0."""
    index = index[len(index) - t.ndim :]
    return t(*[E.const(0) if n == 1 else i for n, i in zip(t.shape, index, strict=True)])


def broadcast_to(data: Tensor, shape: Sequence[int]) -> Tensor:
    """data broadcast to `shape`."""
    shape = tuple(int(n) for n in shape)
    if broadcast_shape(data.shape, shape) != shape:
        raise OperatorError(f"cannot broadcast {data.shape} to {shape}")
    return te.compute(
        shape, lambda *i: _broadcast_index(data, i), name="broadcast_to", tag=tag.BROADCAST
    )


def _binary(name: str, fop: Callable[[E.Expr, E.Expr], E.Expr]) -> Callable[[Any, Any], Any]:
    def op(lhs: Any, rhs: Any) -> Any:
        if not isinstance(lhs, Tensor) and not isinstance(rhs, Tensor):
            return fop(E.convert(lhs), E.convert(rhs))
        if not isinstance(rhs, Tensor):
            return te.compute(
                lhs.shape, lambda *i: fop(lhs(*i), E.convert(rhs, lhs(*i))), name, tag.ELEMWISE
            )
        if not isinstance(lhs, Tensor):
            return te.compute(
                rhs.shape, lambda *i: fop(E.convert(lhs, rhs(*i)), rhs(*i)), name, tag.ELEMWISE
            )
        shape = broadcast_shape(lhs.shape, rhs.shape)
        kind = tag.ELEMWISE if lhs.shape == rhs.shape else tag.BROADCAST
        return te.compute(
            shape,
            lambda *i: fop(_broadcast_index(lhs, i), _broadcast_index(rhs, i)),
            name=name,
            tag=kind,
        )

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of two tensors (or a tensor and a scalar), broadcasting."
    return op


def _divide(a: E.Expr, b: E.Expr) -> E.Expr:
    """a / b; on integers truncated toward zero and defined for every divisor, where the
    hardware's division traps: x / 0 is 0, and a signed x / -1 is -x (wrapping)."""
    if a.dtype.startswith("float"):
        return a / b
    zero, one, minus = E.convert(0, b), E.convert(1, b), E.convert(-1, b)
    signed = a.dtype.startswith("int")
    trap = te.any(b == zero, b == minus) if signed else b == zero
    quotient = a / te.select(trap, one, b)
    if signed:
        quotient = te.select(b == minus, zero - a, quotient)
    return te.select(b == zero, zero, quotient)


add = _binary("add", lambda a, b: a + b)
subtract = _binary("subtract", lambda a, b: a - b)
multiply = _binary("multiply", lambda a, b: a * b)
divide = _binary("divide", _divide)
maximum = _binary("maximum", te.max)
minimum = _binary("minimum", te.min)
power = _binary("power", te.power)
prelu = _binary("prelu", lambda x, slope: te.select(x < E.convert(0.0, x), x * slope, x))
equal = _binary("equal", lambda a, b: a == b)
less = _binary("less", lambda a, b: a < b)
greater = _binary("greater", lambda a, b: a > b)
less_equal = _binary("less_equal", lambda a, b: a <= b)
greater_equal = _binary("greater_equal", lambda a, b: a >= b)
logical_and = _binary("logical_and", E.And)
logical_or = _binary("logical_or", E.Or)
logical_xor = _binary("logical_xor", lambda a, b: a != b)


def where(cond: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """x where cond holds, else y, the three broadcast together."""
    shape = broadcast_shape(cond.shape, x.shape, y.shape)
    return te.compute(
        shape,
        lambda *i: te.select(
            _broadcast_index(cond, i), _broadcast_index(x, i), _broadcast_index(y, i)
        ),
        name="where",
        tag=tag.BROADCAST,
    )
