"""Symbolic interval sets: the range an index expression covers when some variables vary.

Used by bound inference: loop variables inside an attach point are relaxed to their ranges,
the ones outside stay symbolic, so a producer's region is an expression of the outer loops.
"""

from __future__ import annotations

from typing import Any

from ..tir import expr as E
from ..tir.functor import free_vars
from .simplify import Analyzer

Interval = tuple[E.Expr, E.Expr]  # inclusive [lo, hi]


def eval_interval(e: E.Expr, relax: dict[E.Var, Interval], ana: Analyzer) -> Interval | None:
    """[lo, hi] of integer expression `e` over the relaxed variables; None if not affine."""
    if isinstance(e, E.Var):
        return relax.get(e, (e, e))
    if isinstance(e, (E.IntImm,)):
        return (e, e)
    if isinstance(e, (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod, E.Min, E.Max)):
        a = eval_interval(e.a, relax, ana)
        b = eval_interval(e.b, relax, ana)
        if a is None or b is None:
            return None
        return _binary(e, a, b, ana)
    if isinstance(e, (E.Select,)) or (isinstance(e, E.Call) and e.op == "tir.if_then_else"):
        t, f = (e.t, e.f) if isinstance(e, E.Select) else e.args[1:]
        it, jf = eval_interval(t, relax, ana), eval_interval(f, relax, ana)
        if it is None or jf is None:
            return None
        return (ana.simplify(E.Min(it[0], jf[0])), ana.simplify(E.Max(it[1], jf[1])))
    if isinstance(e, E.Cast):
        return eval_interval(e.value, relax, ana)
    if not relax_uses(e, relax):
        return (e, e)
    return None


def relax_uses(e: Any, relax: dict) -> bool:
    return bool(free_vars(e) & relax.keys())


def _point(iv: Interval) -> bool:
    return iv[0] is iv[1]


def _binary(e: E.BinaryOp, a: Interval, b: Interval, ana: Analyzer) -> Interval | None:
    s = ana.simplify
    if _point(a) and _point(b):
        v = s(type(e)(a[0], b[0]))
        return (v, v)
    if isinstance(e, E.Add):
        return (s(a[0] + b[0]), s(a[1] + b[1]))
    if isinstance(e, E.Sub):
        return (s(a[0] - b[1]), s(a[1] - b[0]))
    if isinstance(e, (E.Min, E.Max)):
        f = E.Min if isinstance(e, E.Min) else E.Max
        return (s(f(a[0], b[0])), s(f(a[1], b[1])))
    c = E.as_int(ana.simplify(b[0])) if _point(b) else None
    if c is None:
        return None
    if isinstance(e, E.Mul):
        lo, hi = s(a[0] * c), s(a[1] * c)
        return (lo, hi) if c >= 0 else (hi, lo)
    if c <= 0:
        return None
    if isinstance(e, E.FloorDiv):
        return (s(E.FloorDiv(a[0], c)), s(E.FloorDiv(a[1], c)))
    # floormod: exact when the whole interval sits in one period
    if E.is_const(s(E.FloorDiv(a[0], c) - E.FloorDiv(a[1], c)), 0):
        return (s(E.FloorMod(a[0], c)), s(E.FloorMod(a[1], c)))
    return (E.const(0, e.dtype), E.const(c - 1, e.dtype))
