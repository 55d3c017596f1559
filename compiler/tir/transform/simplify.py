"""Simplify every expression with loop ranges known, and drop provably dead branches."""

from __future__ import annotations

from ...arith import Analyzer
from .. import expr as E
from .. import stmt as S
from ..functor import Mutator


class _Simplify(Mutator):
    def __init__(self, ana: Analyzer):
        self.ana = ana

    def visit(self, node):
        if isinstance(node, E.Expr):
            return self.ana.simplify(node)
        return super().visit(node)

    def visit_For(self, s: S.For) -> S.Stmt:
        lo, ext = E.as_int(self.ana.simplify(s.min)), E.as_int(self.ana.simplify(s.extent))
        if ext == 0:
            return S.Evaluate(0)
        if lo is not None and ext is not None:
            self.ana.bind(s.loop_var, lo, lo + ext - 1)
        s = self.generic(s)
        return s.body if _is_nop(s.body) else s

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        s = self.generic(s)
        if E.is_const(s.cond):
            if s.cond.value:
                return s.then_case
            return s.else_case if s.else_case is not None else S.Evaluate(0)
        return s

    def visit_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
        items = [self.visit(x) for x in s.seq]
        return S.seq(*(x for x in items if not _is_nop(x)))


def _is_nop(s: S.Stmt) -> bool:
    return isinstance(s, S.Evaluate) and E.is_const(s.value)


def simplify_stmt(s: S.Stmt, ana: Analyzer) -> S.Stmt:
    return _Simplify(ana).visit(s)


def simplify(f: S.PrimFunc, ana: Analyzer) -> S.PrimFunc:
    return f.replace(body=simplify_stmt(f.body, ana))
