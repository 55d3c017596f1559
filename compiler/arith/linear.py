"""Affine forms of integer expressions: a sum of constant multiples of variables plus a constant."""

from __future__ import annotations

import functools

from ..tir import expr as E


@functools.lru_cache(maxsize=4096)
def linear(e: E.Expr) -> tuple[dict[E.Var, int], int] | None:
    """`e` as (coefficient per variable, constant) when it is a sum of constant multiples of
    variables (most addresses), else None. Cached by node identity (a lowering asks again for
    every instance of a nest), so the result is shared: read it, do not change it."""
    if isinstance(e, E.IntImm):
        return {}, e.value
    if isinstance(e, E.Var):
        return {e: 1}, 0
    if isinstance(e, E.Cast):
        return linear(e.value)
    if not isinstance(e, (E.Add, E.Sub, E.Mul)):
        return None
    a, b = linear(e.a), linear(e.b)
    if a is None or b is None:
        return None
    if isinstance(e, E.Mul):
        if a[0] and b[0]:
            return None
        (terms, k), scale = (a, b[1]) if a[0] else (b, a[1])
        return {v: c * scale for v, c in terms.items()}, k * scale
    sign = 1 if isinstance(e, E.Add) else -1
    terms = dict(a[0])
    for v, c in b[0].items():
        terms[v] = terms.get(v, 0) + sign * c
    return terms, a[1] + sign * b[1]
