"""Commutative reducers (sum, max, min, user-defined) building Reduce expressions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import OperatorError
from ..tir import expr as E
from ..tir import op
from ..tir.functor import substitute
from .tensor import IterVar


class CommReducer:
    """combine(x, y) with an identity element; associative and commutative by contract."""

    def __init__(self, name: str, fcombine: Callable, fidentity: Callable[[str], Any]):
        self.name, self._fcombine, self._fidentity = name, fcombine, fidentity

    def combine(self, x: E.Expr, y: E.Expr) -> E.Expr:
        lhs, rhs = E.Var("x", x.dtype), E.Var("y", y.dtype)
        return substitute(E.convert(self._fcombine(lhs, rhs)), {lhs: x, rhs: y})

    def identity(self, dtype: str) -> E.Expr:
        return E.Cast(dtype, self._fidentity(dtype))

    def __call__(self, expr: Any, axis: IterVar | list[IterVar], where: Any = None) -> E.Expr:
        if isinstance(axis, (E.Expr, int, float)):  # te.max(a, b): elementwise, as in TVM
            return self.combine(E.convert(expr), E.convert(axis, E.convert(expr)))
        axes = axis if isinstance(axis, (list, tuple)) else [axis]
        for a in axes:
            if a.kind != "reduce":
                raise OperatorError(f"{self.name}: axis {a.name} is not a reduce_axis")
        cond = E.convert(True) if where is None else E.convert(where)
        return E.Reduce(self, E.convert(expr), tuple(axes), cond)


def comm_reducer(
    fcombine: Callable, fidentity: Callable[[str], Any], name: str = "reduce"
) -> CommReducer:
    """A user reducer, e.g. comm_reducer(lambda x, y: x * y, lambda t: 1, "prod")."""
    return CommReducer(name, fcombine, fidentity)


sum = comm_reducer(lambda x, y: x + y, lambda t: 0, "sum")  # noqa: A001
max = comm_reducer(lambda x, y: E.Max(x, y), op.min_value, "max")  # noqa: A001
min = comm_reducer(lambda x, y: E.Min(x, y), op.max_value, "min")  # noqa: A001
