"""Index-arithmetic simplification: canonical affine forms with floordiv/floormod, and bounds.

Integer expressions are rewritten as sum(coef * atom) + const, where atoms are variables and
non-affine parts. floordiv/floormod by a positive constant peel off the multiples of the divisor
and use the constant bounds of loop variables to drop what is provably in range, which is what
makes split/fuse index expressions collapse back to plain affine forms.
"""

from __future__ import annotations

import math
from typing import Any

from ..tir import dtype as dt
from ..tir import expr as E
from ..tir.functor import Mutator, uses_var
from . import intdiv

INF = math.inf
Bound = tuple[float, float]


def skey(e: Any) -> Any:
    """A hashable structural key: equal keys mean structurally equal expressions."""
    if isinstance(e, E.Var):
        return ("v", e.uid)
    if isinstance(e, (E.IntImm, E.FloatImm)):
        return ("c", e.dtype, e.value)
    if isinstance(e, E.StringImm):
        return ("s", e.value)
    extra: tuple = ()
    if isinstance(e, E.Call):
        extra = (e.op,)
    elif isinstance(e, (E.BufferLoad, E.ProducerLoad)):
        extra = (id(getattr(e, "buffer", None) or e.producer),)
    elif isinstance(e, (E.Ramp, E.Broadcast)):
        extra = (e.lanes,)
    parts = []
    for f in e._fields:
        v = getattr(e, f)
        parts.append(tuple(skey(x) for x in v) if isinstance(v, tuple) else skey(v))
    return (type(e).__name__, e.dtype, *extra, *parts)


def structural_equal(a: Any, b: Any) -> bool:
    return skey(a) == skey(b)


class Lin:
    """sum(coef * atom) + const over one integer dtype."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict | None = None, const: int = 0):
        self.terms: dict[Any, tuple[E.Expr, int]] = terms or {}
        self.const = const

    @staticmethod
    def atom(e: E.Expr) -> Lin:
        return Lin({skey(e): (e, 1)})

    def add(self, o: Lin, scale: int = 1) -> Lin:
        terms = dict(self.terms)
        for k, (a, c) in o.terms.items():
            c0 = terms[k][1] if k in terms else 0
            if c0 + c * scale:
                terms[k] = (a, c0 + c * scale)
            else:
                terms.pop(k, None)
        return Lin(terms, self.const + o.const * scale)

    def scale(self, c: int) -> Lin:
        if c == 0:
            return Lin()
        return Lin({k: (a, v * c) for k, (a, v) in self.terms.items()}, self.const * c)


def is_index(e: E.Expr) -> bool:
    """A scalar integer (an index or loop bound)."""
    t = dt.parse(e.dtype)
    return t.code in ("int", "uint") and t.lanes == 1


def _dtype_range(dtype: str) -> Bound:
    t = dt.parse(dtype)
    if t.code == "int":
        return (-(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1)
    if t.code == "uint":
        return (0, 2**t.bits - 1)
    if t.code == "bool":
        return (0, 1)
    return (-INF, INF)


def _mul_bound(a: Bound, b: Bound) -> Bound:
    prods = []
    for x in a:
        for y in b:
            prods.append(0 if x == 0 or y == 0 else x * y)
    return (min(prods), max(prods))


class Analyzer:
    """Simplifies expressions and proves facts given constant ranges of variables."""

    def __init__(self, ranges: dict[E.Var, Bound] | None = None):
        self.ranges: dict[E.Var, Bound] = dict(ranges or {})

    def bind(self, var: E.Var, lo: float, hi: float) -> None:
        """Declare lo <= var <= hi (inclusive)."""
        self.ranges[var] = (lo, hi)

    # ---- constant bounds -------------------------------------------------------------
    def const_bound(self, e: E.Expr) -> Bound:
        if isinstance(e, E.IntImm):
            return (e.value, e.value)
        if isinstance(e, E.Var):
            return self.ranges.get(e, _dtype_range(e.dtype))
        if isinstance(e, E.Add):
            (a0, a1), (b0, b1) = self.const_bound(e.a), self.const_bound(e.b)
            return (a0 + b0, a1 + b1)
        if isinstance(e, E.Sub):
            (a0, a1), (b0, b1) = self.const_bound(e.a), self.const_bound(e.b)
            return (a0 - b1, a1 - b0)
        if isinstance(e, E.Mul):
            return _mul_bound(self.const_bound(e.a), self.const_bound(e.b))
        if isinstance(e, (E.FloorDiv, E.FloorMod)) and isinstance(e.b, E.IntImm) and e.b.value > 0:
            c = e.b.value
            lo, hi = self.const_bound(e.a)
            if isinstance(e, E.FloorDiv):
                return (lo if lo == -INF else lo // c, hi if hi == INF else hi // c)
            if lo >= 0 and hi < c:
                return (lo, hi)
            return (0, c - 1)
        if isinstance(e, (E.Min, E.Max)):
            (a0, a1), (b0, b1) = self.const_bound(e.a), self.const_bound(e.b)
            f = min if isinstance(e, E.Min) else max
            return (f(a0, b0), f(a1, b1))
        if isinstance(e, E.Select):
            (a0, a1), (b0, b1) = self.const_bound(e.t), self.const_bound(e.f)
            return (min(a0, b0), max(a1, b1))
        if isinstance(e, E.Cast) and is_index(e.value):
            lo, hi = self.const_bound(e.value)
            r0, r1 = _dtype_range(e.dtype)
            return (lo, hi) if r0 <= lo and hi <= r1 else (r0, r1)
        return _dtype_range(e.dtype)

    def lin_bound(self, lin: Lin) -> Bound:
        lo = hi = lin.const
        for a, c in lin.terms.values():
            b0, b1 = _mul_bound(self.const_bound(a), (c, c))
            lo, hi = lo + b0, hi + b1
        return (lo, hi)

    def affine_in(self, e: E.Expr, var: E.Var) -> tuple[E.Expr, int] | None:
        """(base, stride) with e == base + stride * var, base free of var, when var is a term
        of e's canonical form and in no other term (else None)."""
        lin = self.to_lin(e)
        key = skey(var)
        if key not in lin.terms:
            return None
        rest = Lin({k: t for k, t in lin.terms.items() if k != key}, lin.const)
        if any(uses_var(a, var) for a, _ in rest.terms.values()):
            return None
        return self.from_lin(rest, e.dtype), lin.terms[key][1]

    def can_prove(self, cond: E.Expr) -> bool:
        return E.is_const(self.simplify(cond), 1)

    # ---- canonical form --------------------------------------------------------------
    def to_lin(self, e: E.Expr) -> Lin:
        if isinstance(e, E.IntImm):
            return Lin({}, e.value)
        if isinstance(e, E.Add):
            return self.to_lin(e.a).add(self.to_lin(e.b))
        if isinstance(e, E.Sub):
            return self.to_lin(e.a).add(self.to_lin(e.b), -1)
        if isinstance(e, E.Mul):
            la, lb = self.to_lin(e.a), self.to_lin(e.b)
            if not la.terms:
                return lb.scale(la.const)
            if not lb.terms:
                return la.scale(lb.const)
            return Lin.atom(E.Mul(self.from_lin(la, e.dtype), self.from_lin(lb, e.dtype)))
        if isinstance(e, (E.FloorDiv, E.FloorMod)):
            lb = self.to_lin(e.b)
            la = self.to_lin(e.a)
            if not lb.terms and lb.const > 0:
                return (self._floordiv if isinstance(e, E.FloorDiv) else self._floormod)(
                    la, lb.const, e.dtype
                )
            a, b = self.from_lin(la, e.dtype), self.from_lin(lb, e.dtype)
            if not la.terms and not lb.terms:
                f = intdiv.floordiv if isinstance(e, E.FloorDiv) else intdiv.floormod
                return Lin({}, f(la.const, lb.const, e.dtype))
            return Lin.atom(type(e)(a, b))
        if isinstance(e, (E.Min, E.Max)):
            a, b = self.simplify(e.a), self.simplify(e.b)
            d = self.lin_bound(self.to_lin(a).add(self.to_lin(b), -1))
            first = d[1] <= 0 if isinstance(e, E.Min) else d[0] >= 0
            second = d[0] >= 0 if isinstance(e, E.Min) else d[1] <= 0
            if first:
                return self.to_lin(a)
            if second:
                return self.to_lin(b)
            return Lin.atom(type(e)(a, b))
        if isinstance(e, E.Var):
            return Lin.atom(e)
        s = _Simplifier(self).generic(e)
        return Lin({}, s.value) if isinstance(s, E.IntImm) else Lin.atom(s)

    def _split(self, la: Lin, c: int) -> tuple[Lin, Lin]:
        """la = c * q + r with every coefficient of r not a multiple of c and 0 <= r.const < c."""
        q, r = Lin({}, la.const // c), Lin({}, la.const % c)
        for k, (a, coef) in la.terms.items():
            if coef % c == 0:
                q.terms[k] = (a, coef // c)
            else:
                r.terms[k] = (a, coef)
        return q, r

    def _floordiv(self, la: Lin, c: int, dtype: str) -> Lin:
        if c == 1:
            return la
        q, r = self._split(la, c)
        lo, hi = self.lin_bound(r)
        if lo > -INF and hi < INF and lo // c == hi // c:
            return q.add(Lin({}, int(lo // c)))
        if len(r.terms) == 1 and r.const == 0:
            ((a, coef),) = r.terms.values()
            if (
                coef == 1
                and isinstance(a, E.FloorDiv)
                and isinstance(a.b, E.IntImm)
                and a.b.value > 0
            ):
                return q.add(Lin.atom(E.FloorDiv(a.a, E.const(a.b.value * c, dtype))))
        return q.add(Lin.atom(E.FloorDiv(self.from_lin(r, dtype), E.const(c, dtype))))

    def _floormod(self, la: Lin, c: int, dtype: str) -> Lin:
        if c == 1:
            return Lin()
        _, r = self._split(la, c)
        lo, hi = self.lin_bound(r)
        if lo > -INF and hi < INF and lo // c == hi // c:
            return r.add(Lin({}, -int(lo // c) * c))
        if len(r.terms) == 1 and r.const == 0:
            ((a, coef),) = r.terms.values()
            if (
                coef == 1
                and isinstance(a, E.FloorMod)
                and isinstance(a.b, E.IntImm)
                and a.b.value % c == 0
            ):
                return Lin.atom(E.FloorMod(a.a, E.const(c, dtype)))
        return Lin.atom(E.FloorMod(self.from_lin(r, dtype), E.const(c, dtype)))

    def _merge_divmod(self, lin: Lin) -> Lin:
        """Fold c*k*floordiv(x, c) + k*floormod(x, c) back into k*x."""
        for key, (a, k) in list(lin.terms.items()):
            if (
                not (isinstance(a, E.FloorMod) and isinstance(a.b, E.IntImm))
                or key not in lin.terms
            ):
                continue
            dkey = skey(E.FloorDiv(a.a, a.b))
            if dkey in lin.terms and lin.terms[dkey][1] == k * a.b.value:
                rest = Lin({q: v for q, v in lin.terms.items() if q not in (key, dkey)}, lin.const)
                return self._merge_divmod(rest.add(self.to_lin(a.a), k))
        return lin

    def from_lin(self, lin: Lin, dtype: str) -> E.Expr:
        lin = self._merge_divmod(lin)
        out: E.Expr | None = None
        for a, c in sorted(lin.terms.values(), key=lambda t: t[1] < 0):
            if out is None:
                out = a if c == 1 else E.Mul(a, E.const(c, dtype))
            elif c > 0:
                out = E.Add(out, a if c == 1 else E.Mul(a, E.const(c, dtype)))
            else:
                out = E.Sub(out, a if c == -1 else E.Mul(a, E.const(-c, dtype)))
        if out is None:
            return E.const(lin.const, dtype)
        if lin.const > 0:
            return E.Add(out, E.const(lin.const, dtype))
        if lin.const < 0:
            return E.Sub(out, E.const(-lin.const, dtype))
        return out

    def simplify(self, e: Any) -> Any:
        """Simplify an expression or every expression inside a statement."""
        return _Simplifier(self).visit(e)


def _fold(e: E.BinaryOp) -> E.Expr | None:
    a, b = e.a, e.b
    if not (E.is_const(a) and E.is_const(b)):
        return None
    x, y = a.value, b.value
    ops = {
        E.Add: lambda: x + y,
        E.Sub: lambda: x - y,
        E.Mul: lambda: x * y,
        E.Min: lambda: min(x, y),
        E.Max: lambda: max(x, y),
        E.EQ: lambda: x == y,
        E.NE: lambda: x != y,
        E.LT: lambda: x < y,
        E.LE: lambda: x <= y,
        E.GT: lambda: x > y,
        E.GE: lambda: x >= y,
        E.And: lambda: bool(x) and bool(y),
        E.Or: lambda: bool(x) or bool(y),
    }
    if type(e) in ops:
        return E.const(ops[type(e)](), e.dtype)
    if isinstance(e, E.Div) and not dt.is_float(e.dtype):
        return E.const(intdiv.truncdiv(x, y, e.dtype), e.dtype)
    if isinstance(e, E.Div) and y != 0:
        return E.const(x / y, e.dtype)
    return None


def _branches(node: Any) -> tuple | None:
    """(condition, then, else) of a Select or an if_then_else call, else None."""
    if isinstance(node, E.Select):
        return node.cond, node.t, node.f
    if isinstance(node, E.Call) and node.op == "tir.if_then_else":
        return tuple(node.args)
    return None


_CMP = {
    E.LT: lambda lo, hi: (hi < 0, lo >= 0),
    E.LE: lambda lo, hi: (hi <= 0, lo > 0),
    E.GT: lambda lo, hi: (lo > 0, hi <= 0),
    E.GE: lambda lo, hi: (lo >= 0, hi < 0),
    E.EQ: lambda lo, hi: (lo == hi == 0, lo > 0 or hi < 0),
    E.NE: lambda lo, hi: (lo > 0 or hi < 0, lo == hi == 0),
}


class _Simplifier(Mutator):
    def __init__(self, ana: Analyzer):
        self.ana = ana

    def visit(self, node: Any) -> Any:
        if isinstance(node, E.Expr) and is_index(node) and not isinstance(node, E.CmpOp):
            if isinstance(node, (E.Var, E.IntImm)):
                return node
            return self.ana.from_lin(self.ana.to_lin(node), node.dtype)
        branches = _branches(node)
        if branches:  # a choice the condition settles: the other branch is never visited
            cond = self.visit(branches[0])
            if E.is_const(cond):
                return self.visit(branches[1] if cond.value else branches[2])
        return super().visit(node)

    def generic(self, node: Any) -> Any:
        node = super().generic(node)
        if isinstance(node, E.BinaryOp):
            folded = _fold(node)
            if folded is not None:
                return folded
            if type(node) in _CMP and is_index(node.a) and is_index(node.b):
                d = self.ana.lin_bound(self.ana.to_lin(E.Sub(node.a, node.b)))
                yes, no = _CMP[type(node)](*d)
                if yes or no:
                    return E.const(bool(yes), "bool")
            if isinstance(node, (E.And, E.Or)):
                for x, y in ((node.a, node.b), (node.b, node.a)):
                    if E.is_const(x):
                        keep = bool(x.value) == isinstance(node, E.And)
                        return y if keep else x
            if dt.is_float(node.dtype):
                if isinstance(node, (E.Add, E.Sub)) and E.is_const(node.b, 0):
                    return node.a
                if isinstance(node, E.Mul) and E.is_const(node.b, 1):
                    return node.a
        if isinstance(node, E.Not) and E.is_const(node.a):
            return E.const(not node.a.value, "bool")
        if isinstance(node, E.Select) and E.is_const(node.cond):
            return node.t if node.cond.value else node.f
        if isinstance(node, E.Call) and node.op == "tir.if_then_else" and E.is_const(node.args[0]):
            return node.args[1] if node.args[0].value else node.args[2]
        if isinstance(node, E.Cast):
            if node.value.dtype == node.dtype:
                return node.value
            if E.is_const(node.value) and dt.lanes(node.dtype) == 1:
                v = node.value.value
                return E.const(v if dt.is_float(node.dtype) else int(v), node.dtype)
        return node
