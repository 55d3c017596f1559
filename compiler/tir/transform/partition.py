"""Loop partitioning (TVM's LoopPartition): a loop whose guards are provably true on a main
range is split into a guard-free main loop and guarded head/tail loops.

Non-divisible splits leave a bound check inside the innermost loops; inside a vectorized or
unrolled loop it would scalarize or bloat every iteration, so only guards in or around such a
loop are considered. A one-iteration piece loses its loop, which turns its guards into constant
checks of the inner loops, partitioned in turn (the last tile's vector loop becomes 40 lanes).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import Any

from ...arith import Analyzer
from ...arith.simplify import Lin, is_index, skey
from .. import expr as E
from .. import stmt as S
from ..functor import Mutator, collect, free_vars, substitute, uses_var
from .simplify import simplify, simplify_stmt

Interval = tuple[float, float]  # inclusive, may be infinite
HOT_KINDS = ("vectorized", "unrolled")


def _conjuncts(cond: E.Expr) -> Iterator[E.Expr]:
    if isinstance(cond, E.And):
        yield from _conjuncts(cond.a)
        yield from _conjuncts(cond.b)
    else:
        yield cond


def _is_hot(n: Any) -> bool:
    return isinstance(n, S.For) and n.kind in HOT_KINDS


def _guards(s: S.Stmt, ana: Analyzer, hot: bool) -> Iterator[E.Expr]:
    """Conjuncts of the IfThenElse conditions in `s` that sit in or around a vectorized or
    unrolled loop; binds the constant ranges of the loops passed on the way."""
    if isinstance(s, S.For):
        lo, n = E.as_int(s.min), E.as_int(s.extent)
        if lo is not None and n is not None:
            ana.bind(s.loop_var, lo, lo + n - 1)
        yield from _guards(s.body, ana, hot or s.kind in HOT_KINDS)
    elif isinstance(s, S.IfThenElse):
        if hot or collect(s.then_case, _is_hot):
            yield from _conjuncts(s.cond)
        yield from _guards(s.then_case, ana, hot)
        if s.else_case is not None:
            yield from _guards(s.else_case, ana, hot)
    elif isinstance(s, S.SeqStmt):
        for x in s.seq:
            yield from _guards(x, ana, hot)
    elif isinstance(s, (S.Allocate, S.AttrStmt, S.LetStmt)):
        yield from _guards(s.body, ana, hot)


def _as_negative(cond: E.Expr, ana: Analyzer) -> Lin | None:
    """d with `cond` <=> d < 0, for an integer comparison other than == and !=."""
    if not isinstance(cond, (E.LT, E.LE, E.GT, E.GE)) or E.is_const(cond):
        return None
    if not (is_index(cond.a) and is_index(cond.b)):
        return None
    d = ana.to_lin(cond.a).add(ana.to_lin(cond.b), -1)  # a - b
    if isinstance(cond, E.LT):
        return d
    if isinstance(cond, E.LE):
        return d.add(Lin({}, -1))
    if isinstance(cond, E.GT):
        return d.scale(-1)
    return d.scale(-1).add(Lin({}, -1))


def true_range(cond: E.Expr, var: E.Var, ana: Analyzer) -> Interval | None:
    """The values of `var` for which `cond` holds whatever the other variables are (within
    their bound ranges); None when `cond` is not monotone in `var` in a form handled here:
    c * var or c * floordiv(var + k, m) plus terms free of `var`."""
    d = _as_negative(cond, ana)
    if d is None:
        return None
    mine = [(key, a, c) for key, (a, c) in d.terms.items() if uses_var(a, var)]
    if len(mine) != 1:
        return None
    key, atom, coef = mine[0]
    rest = Lin({k: t for k, t in d.terms.items() if k != key}, d.const)
    hi = ana.lin_bound(rest)[1]
    if hi == math.inf:
        return None
    # coef * w + rest < 0 for every rest <= hi  <=>  coef * w < -hi
    if coef > 0:
        w: Interval = (-math.inf, (-hi - 1) // coef)
    else:
        w = (hi // -coef + 1, math.inf)
    if atom is var:
        return w
    return _through_floordiv(atom, var, w, ana)


def _through_floordiv(atom: E.Expr, var: E.Var, w: Interval, ana: Analyzer) -> Interval | None:
    """The range of var with floordiv(var + k, m) in w."""
    if not (isinstance(atom, E.FloorDiv) and isinstance(atom.b, E.IntImm) and atom.b.value > 0):
        return None
    inner = ana.to_lin(atom.a)
    if len(inner.terms) != 1 or next(iter(inner.terms.values())) != (var, 1):
        return None
    m, k = atom.b.value, inner.const
    return (w[0] * m - k, w[1] * m + m - 1 - k)


class _Partition(Mutator):
    def __init__(self, ana: Analyzer):
        self.ana = ana

    def visit_For(self, s: S.For) -> S.Stmt:
        lo, n = E.as_int(s.min), E.as_int(s.extent)
        if lo is None or n is None or s.kind in ("vthread", "thread_binding"):
            return self.generic(s)
        self.ana.bind(s.loop_var, lo, lo + n - 1)
        main = self._main_range(s, lo, lo + n - 1)
        if main is None:
            return self.generic(self._unswitch(s))
        m0, m1 = main
        pieces = [(lo, m0 - 1), (m0, m1), (m1 + 1, lo + n - 1)]
        return S.seq(*(self._piece(s, a, b) for a, b in pieces if a <= b))

    def _main_range(self, s: S.For, lo: int, hi: int) -> tuple[int, int] | None:
        """The largest sub-range where the guards on the loop variable are all provable, when
        it is a proper, non-empty part of [lo, hi]."""
        m0, m1 = lo, hi
        found = False
        for cond in list(_guards(s.body, self.ana, s.kind in HOT_KINDS)):
            if not uses_var(cond, s.loop_var):
                continue
            r = true_range(cond, s.loop_var, self.ana)
            if r is None:
                continue
            a, b = max(m0, r[0]), min(m1, r[1])
            if a <= b:
                m0, m1, found = int(a), int(b), True
        if not found or (m0, m1) == (lo, hi):
            return None
        return m0, m1

    def _unswitch(self, s: S.For) -> S.Stmt:
        """`if <guards hold for every inner iteration>: body without them else: body`, for
        guards no partition removes (e.g. through floormod of a fused loop): decided once per
        iteration of `s` instead of in every vector lane."""
        if s.kind in HOT_KINDS:
            return s
        mine = [c for c in _guards(s.body, self.ana, False) if uses_var(c, s.loop_var)]
        if not mine:
            return s
        inner = {x.loop_var for x in collect(s.body, lambda n: isinstance(n, S.For))}
        conds = {}
        for cond in mine:
            if free_vars(cond) & inner:
                hoisted = _for_all(cond, inner, self.ana)
                if hoisted is not None:
                    conds[skey(cond)] = hoisted
        if not conds:
            return s
        fast = simplify_stmt(_AssumeTrue(set(conds)).visit(s.body), self.ana)
        tests = {skey(c): c for c in conds.values()}
        test = functools.reduce(E.And, tests.values())
        return s.replace(body=S.IfThenElse(test, fast, s.body))

    def _piece(self, s: S.For, a: int, b: int) -> S.Stmt:
        if a == b:
            return self.visit(substitute(s.body, {s.loop_var: E.const(a, s.loop_var.dtype)}))
        v = E.Var(s.loop_var.name, s.loop_var.dtype)
        self.ana.bind(v, 0, b - a)
        body = substitute(s.body, {s.loop_var: v + a if a else v})
        return self.visit(S.For(v, 0, b - a + 1, s.kind, body, s.thread_tag))


def _for_all(cond: E.Expr, inner: set[E.Var], ana: Analyzer) -> E.Expr | None:
    """A condition free of the `inner` variables implying `cond` for all their values."""
    d = _as_negative(cond, ana)
    if d is None:
        return None
    outer, rest = Lin({}, d.const), Lin()
    for key, (a, c) in d.terms.items():
        used = free_vars(a)
        part = rest if used & inner else outer
        if part is rest and not used <= inner:
            return None
        part.terms[key] = (a, c)
    hi = ana.lin_bound(rest)[1]
    if hi == math.inf:
        return None
    lhs = ana.from_lin(outer.add(Lin({}, int(hi))), cond.a.dtype)
    return E.LT(lhs, E.const(0, lhs.dtype))


class _AssumeTrue(Mutator):
    """Drops the given conjuncts (by structural key) from IfThenElse conditions."""

    def __init__(self, keys: set):
        self.keys = keys

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        s = self.generic(s)
        conds = list(_conjuncts(s.cond))
        kept = [c for c in conds if skey(c) not in self.keys]
        if len(kept) == len(conds):
            return s
        if not kept:
            return s.then_case
        return s.replace(cond=functools.reduce(E.And, kept))


def loop_partition(f: S.PrimFunc, ana: Analyzer) -> S.PrimFunc:
    """Partition loops whose guards around vectorized/unrolled code hold on a main range."""
    return simplify(f.replace(body=_Partition(ana).visit(f.body)), ana)
