"""Intrinsic calls and helpers: math functions, if_then_else, select, all/any, extern calls."""

from __future__ import annotations

from functools import reduce
from typing import Any

import numpy as np

from . import dtype as dt
from .expr import And, Call, Cast, Expr, Max, Min, Or, Select, convert

# unary float intrinsics the LLVM backend lowers to llvm.* intrinsics or libm
UNARY_MATH = (
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "erf",
    "fabs",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sinh",
    "cosh",
    "atan",
    "asin",
    "acos",
    "asinh",
    "acosh",
    "atanh",
    "nearbyint",
)


def _float_arg(x: Any) -> Expr:
    x = convert(x)
    return x if dt.is_float(x.dtype) else Cast("float32", x)


def _unary(name: str):
    def f(x: Any) -> Expr:
        x = _float_arg(x)
        return Call(x.dtype, name, [x])

    f.__name__ = name
    f.__doc__ = f"Elementwise {name}."
    return f


exp, exp2, log, log2, log10, sqrt = (
    _unary(n) for n in ("exp", "exp2", "log", "log2", "log10", "sqrt")
)
sin, cos, tan, tanh, erf = (_unary(n) for n in ("sin", "cos", "tan", "tanh", "erf"))
floor, ceil, round, trunc = (_unary(n) for n in ("floor", "ceil", "round", "trunc"))  # noqa: A001
sinh, cosh, asin, acos, atan = (_unary(n) for n in ("sinh", "cosh", "asin", "acos", "atan"))
asinh, acosh, atanh = (_unary(n) for n in ("asinh", "acosh", "atanh"))
nearbyint = _unary("nearbyint")  # rounds halves to even (the default rounding mode)


def fast_erf(x: Any) -> Expr:
    """erf within 5e-7 in float32, by arithmetic the LLVM backend emits inline, so a
    vectorized loop stays vectorized (erf is libm's erff, a scalar call per lane); float64's
    is erf's."""
    x = _float_arg(x)
    return Call(x.dtype, "fast_erf", [x])


def fast_exp(x: Any) -> Expr:
    """exp within 2 ulp in float32, by arithmetic the LLVM backend emits inline (exp is libm's
    expf, a scalar call per lane), 0 below -86.6; float64's is exp's."""
    x = _float_arg(x)
    return Call(x.dtype, "fast_exp", [x])


def abs(x: Any) -> Expr:  # noqa: A001
    """Absolute value for ints and floats."""
    x = convert(x)
    if dt.is_float(x.dtype):
        return Call(x.dtype, "fabs", [x])
    return Select(x < 0, -x, x)


def sigmoid(x: Any) -> Expr:
    """1 / (1 + exp(-x))."""
    x = _float_arg(x)
    return convert(1.0, x) / (convert(1.0, x) + exp(-x))


def power(x: Any, y: Any) -> Expr:
    x = _float_arg(x)
    return Call(x.dtype, "pow", [x, convert(y, x)])


def if_then_else(cond: Any, t: Any, f: Any) -> Expr:
    """cond ? t : f evaluating only the taken branch (so guarded loads may be out of bounds)."""
    t = convert(t, f if isinstance(f, Expr) else None)
    f = convert(f, t)
    if t.dtype != f.dtype:
        target = dt.promote(t.dtype, f.dtype)
        t, f = (x if x.dtype == target else Cast(target, x) for x in (t, f))
    return Call(t.dtype, "tir.if_then_else", [convert(cond), t, f])


def select(cond: Any, t: Any, f: Any) -> Expr:
    """cond ? t : f evaluating both sides (cheap, vectorizes to a blend)."""
    return Select(cond, t, f)


def all(*conds: Any) -> Expr:  # noqa: A001
    return reduce(And, [convert(c) for c in conds])


def any(*conds: Any) -> Expr:  # noqa: A001
    return reduce(Or, [convert(c) for c in conds])


def min(a: Any, b: Any) -> Expr:  # noqa: A001
    return Min(a, b)


def max(a: Any, b: Any) -> Expr:  # noqa: A001
    return Max(a, b)


def cast(value: Any, dtype: str) -> Expr:
    return Cast(dtype, value)


def max_value(dtype: str) -> Expr:
    t = dt.parse(dtype)
    if t.code == "float":
        return convert(float(np.finfo(dt.to_numpy(dtype)).max), None).astype(dtype)
    return convert(int(np.iinfo(dt.to_numpy(dtype)).max)).astype(dtype)


def min_value(dtype: str) -> Expr:
    t = dt.parse(dtype)
    if t.code == "float":
        return convert(float(np.finfo(dt.to_numpy(dtype)).min)).astype(dtype)
    return convert(int(np.iinfo(dt.to_numpy(dtype)).min)).astype(dtype)


def call_extern(dtype: str, name: str, *args: Any) -> Call:
    """A call of an external C-ABI symbol (resolved when the module is JIT-linked)."""
    return Call(dtype, name, args, extern=True)
