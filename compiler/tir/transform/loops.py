"""Loop passes: virtual-thread injection, unrolling, and vectorization to LLVM vector types."""

from __future__ import annotations

from ...arith import Analyzer
from ...arith.simplify import is_index
from .. import dtype as dt
from .. import expr as E
from .. import stmt as S
from ..functor import Mutator, collect, substitute, uses_var
from .flatten import flat_index

MAX_UNROLL = 256
# the widest vector register of the supported targets (AVX-512); LLVM splits power-of-two
# vectors of this size into whole registers on narrower targets (NEON, AVX2)
MAX_VECTOR_BYTES = 64


# ---- virtual threads ----------------------------------------------------------------------
class _VThread(Mutator):
    """Push a vthread loop inwards past loops that do not depend on it, and replicate the body
    per virtual thread at the statements that use it (a statement free of the thread variable,
    such as a fetch into memory all virtual threads share, runs once); buffers allocated
    inside get one copy per thread."""

    def __init__(self, var: E.Var, n: int, body: S.Stmt):
        self.var, self.n = var, n
        self.touched = _touched_buffers(body, var)

    def replicate(self, s: S.Stmt) -> S.Stmt:
        if not uses_var(s, self.var):
            return s
        return S.seq(*(substitute(s, {self.var: E.const(k)}) for k in range(self.n)))

    def visit_For(self, s: S.For) -> S.Stmt:
        if uses_var(s.extent, self.var) or uses_var(s.min, self.var):
            return self.replicate(s)
        return s.replace(body=self.visit(s.body))

    def visit_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
        return S.seq(*(self.visit(x) for x in s.seq))

    def visit_AttrStmt(self, s: S.AttrStmt) -> S.Stmt:
        return s.replace(body=self.visit(s.body))

    def visit_Allocate(self, s: S.Allocate) -> S.Stmt:
        buf = s.buffer
        if buf.data not in self.touched:  # every virtual thread sees the same contents
            return s.replace(body=self.visit(s.body))
        per = buf.const_size()
        big = S.Buffer(buf.name, [per * self.n], buf.dtype, buf.scope, data=buf.data)
        body = _Offset(buf, big, self.var, per).visit(s.body)
        return S.Allocate(big, self.visit(body))

    def generic(self, s):
        return self.replicate(s) if isinstance(s, S.Stmt) else s


def _touched_buffers(body: S.Stmt, var: E.Var) -> set[E.Var]:
    """Buffers whose contents differ between virtual threads: stored at an index or with a
    value that depends on the thread variable or on such a buffer (TVM's VarTouchedAnalysis)."""
    stores = collect(body, lambda n: isinstance(n, S.BufferStore))
    touched: set[E.Var] = set()
    while True:
        new = {
            st.buffer.data
            for st in stores
            if st.buffer.data not in touched
            and (
                uses_var(st, var)
                or any(
                    ld.buffer.data in touched
                    for ld in collect(st, lambda n: isinstance(n, E.BufferLoad))
                )
            )
        }
        if not new:
            return touched
        touched |= new


class _Offset(Mutator):
    """Accesses of `old` become flat accesses of `new` at the vthread's copy."""

    def __init__(self, old: S.Buffer, new: S.Buffer, var: E.Var, per: int):
        self.old, self.new, self.var, self.per = old, new, var, per

    def _index(self, indices):
        return [flat_index(self.old, indices) + self.var * self.per]

    def visit_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        e = self.generic(e)
        return E.BufferLoad(self.new, self._index(e.indices)) if e.buffer is self.old else e

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        s = self.generic(s)
        if s.buffer is not self.old:
            return s
        return S.BufferStore(self.new, s.value, self._index(s.indices))


class _InjectVThread(Mutator):
    def visit_For(self, s: S.For) -> S.Stmt:
        s = self.generic(s)
        if s.kind != "vthread":
            return s
        n = E.as_int(s.extent)
        if n is None:
            return s.replace(kind="serial")
        return _VThread(s.loop_var, n, s.body).visit(s.body)


def inject_virtual_thread(f: S.PrimFunc, ana: Analyzer) -> S.PrimFunc:
    """Lower vthread loops to interleaved serial code (one copy of each statement per thread)."""
    return f.replace(body=_InjectVThread().visit(f.body))


# ---- unrolling ----------------------------------------------------------------------------
class _Unroll(Mutator):
    def visit_For(self, s: S.For) -> S.Stmt:
        s = self.generic(s)
        n = E.as_int(s.extent)
        if s.kind != "unrolled":
            return s
        if n is None or n > MAX_UNROLL:
            return s.replace(kind="serial")
        return S.seq(*(substitute(s.body, {s.loop_var: s.min + k}) for k in range(n)))


def unroll_loops(f: S.PrimFunc, ana: Analyzer) -> S.PrimFunc:
    return f.replace(body=ana.simplify(_Unroll().visit(f.body)))


# ---- vectorization ------------------------------------------------------------------------
class _Scalarize(Exception):
    """The loop body cannot become vector code; keep the loop serial."""


def _lanes(e: E.Expr) -> int:
    return dt.lanes(e.dtype)


def _bcast(e: E.Expr, n: int) -> E.Expr:
    return e if _lanes(e) == n else E.Broadcast(e, n)


class _Vectorizer(Mutator):
    """Rewrites the body of `for v in range(n)` as one vector iteration of n lanes."""

    def __init__(self, var: E.Var, n: int, ana: Analyzer):
        self.var, self.n, self.ana = var, n, ana

    def visit_Var(self, v: E.Var) -> E.Expr:
        return E.Ramp(0, 1, self.n) if v is self.var else v

    def _index(self, index: E.Expr) -> E.Expr:
        """A Ramp when the index is affine in the loop variable with a constant stride."""
        if not uses_var(index, self.var):
            return index
        affine = self.ana.affine_in(index, self.var) if is_index(index) else None
        if affine is not None:  # one canonical form instead of the three simplifications below
            return E.Ramp(affine[0], E.const(affine[1], index.dtype), self.n)
        base = self.ana.simplify(substitute(index, {self.var: E.const(0)}))
        stride = self.ana.simplify(substitute(index, {self.var: E.const(1)}) - base)
        if isinstance(stride, E.IntImm):
            rest = self.ana.simplify(index - (base + self.var * stride.value))
            if E.is_const(rest, 0):
                return base if stride.value == 0 else E.Ramp(base, stride, self.n)
        return self.visit(index)

    def visit_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        return E.BufferLoad(e.buffer, [self._index(e.indices[0])])

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        index = self._index(s.indices[0])
        value = self.visit(s.value)
        if _lanes(index) == 1:
            raise _Scalarize  # every lane would store to one address
        return S.BufferStore(s.buffer, _bcast(value, self.n), [index])

    def generic(self, node):
        node = super().generic(node)
        if isinstance(node, (E.BinaryOp, E.Select)):
            fields = ("a", "b") if isinstance(node, E.BinaryOp) else ("cond", "t", "f")
            n = max(_lanes(getattr(node, f)) for f in fields)
            if n > 1:
                return node.replace(**{f: _bcast(getattr(node, f), n) for f in fields})
        if isinstance(node, E.Call):
            if node.op == "tir.if_then_else":
                if _lanes(node.args[0]) > 1:
                    raise _Scalarize  # lanes would take different branches
                n = max(_lanes(a) for a in node.args[1:])
                return node.replace(args=(node.args[0], *(_bcast(a, n) for a in node.args[1:])))
            if node.extern or node.op == "tir.address_of":
                if any(_lanes(a) > 1 for a in node.args):
                    raise _Scalarize
                return node
            n = max((_lanes(a) for a in node.args), default=1)
            if n > 1:
                return node.replace(args=tuple(_bcast(a, n) for a in node.args))
        return node

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        if uses_var(s.cond, self.var):
            raise _Scalarize
        return self.generic(s)

    def visit_For(self, s: S.For) -> S.Stmt:
        if uses_var(s.extent, self.var) or s.kind == "parallel":
            raise _Scalarize
        return self.generic(s)

    def visit_Allocate(self, s: S.Allocate) -> S.Stmt:
        raise _Scalarize

    def visit_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        raise _Scalarize


def register_lanes(body: S.Stmt, max_bytes: int = MAX_VECTOR_BYTES) -> int:
    """Lanes of the widest data type loaded, stored or cast to in `body` per vector register
    of `max_bytes`."""
    dtypes = [
        n.buffer.dtype if isinstance(n, S.BufferStore) else n.dtype
        for n in collect(body, lambda n: isinstance(n, (E.BufferLoad, S.BufferStore, E.Cast)))
    ]
    widest = max((dt.itemsize(dt.element_of(t)) for t in dtypes if t != "handle"), default=4)
    return max(1, max_bytes // widest)


def vector_pieces(n: int, lanes: int) -> list[tuple[int, int]]:
    """(offset, width) pieces covering n lanes: whole registers of `lanes` (a power of two),
    then the remainder in decreasing powers of two (40 -> 16, 16, 8), all legal vector types."""
    out, k, w = [], 0, lanes
    while k < n:
        while w > n - k:
            w //= 2
        out.append((k, w))
        k += w
    return out


class _Vectorize(Mutator):
    def __init__(self, ana: Analyzer, max_bytes: int):
        self.ana, self.max_bytes = ana, max_bytes

    def _piece(self, s: S.For, offset: int, width: int) -> S.Stmt:
        v = s.loop_var
        if width == 1:
            return substitute(s.body, {v: E.const(offset, v.dtype)})
        body = substitute(s.body, {v: v + offset}) if offset else s.body
        return _Vectorizer(v, width, self.ana).visit(body)

    def visit_For(self, s: S.For) -> S.Stmt:
        lo, n = E.as_int(s.min), E.as_int(s.extent)
        if lo is not None and n is not None:
            self.ana.bind(s.loop_var, lo, lo + n - 1)
        s = self.generic(s)
        if s.kind != "vectorized":
            return s
        if n is None or n < 2 or lo != 0:
            return s.replace(kind="serial")
        try:
            pieces = vector_pieces(n, register_lanes(s.body, self.max_bytes))
            return S.seq(*(self._piece(s, k, w) for k, w in pieces))
        except _Scalarize:
            return s.replace(kind="serial")


def vectorize_loops(f: S.PrimFunc, ana: Analyzer, max_bytes: int = MAX_VECTOR_BYTES) -> S.PrimFunc:
    """Replace vectorized loops by vector code in register-sized pieces (`max_bytes` each: a
    CPU's widest register, or a GPU's 16-byte vector load); loops that cannot be vectorized
    stay serial."""
    return f.replace(body=_Vectorize(ana, max_bytes).visit(f.body))
