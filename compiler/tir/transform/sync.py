"""Barrier insertion (TVM's ThreadSync for shared memory): a __syncthreads goes where a
statement reads a shared buffer that another statement wrote since the last barrier, or writes
one that another statement read, and only there.

Each statement is summarized by the shared buffers it reads and writes before its first barrier
(its head) and after its last one (its tail). In a sequence, a statement whose head conflicts
with what is pending since the last barrier gets a barrier in front of it. A loop whose tail
conflicts with its own head (the next iteration overwrites what this one still reads) gets one
at the top of its body. A barrier under a condition that differs between threads of a block
would hang the block, so needing one there is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...arith import Analyzer
from ...errors import LoweringError
from .. import expr as E
from .. import stmt as S
from ..functor import collect
from .thread import barrier, divergent, host_parts, is_barrier, launch_extents, thread_vars


@dataclass
class _Access:
    reads: set[E.Var] = field(default_factory=set)
    writes: set[E.Var] = field(default_factory=set)

    def conflicts(self, later: _Access) -> bool:
        """A read after a write or a write after a read (writes of one buffer by a sequence
        of statements are to disjoint places in well-formed schedules, as TVM assumes)."""
        return bool(self.writes & later.reads or self.reads & later.writes)

    def __ior__(self, o: _Access) -> _Access:
        self.reads |= o.reads
        self.writes |= o.writes
        return self

    def copy(self) -> _Access:
        return _Access(set(self.reads), set(self.writes))


@dataclass
class _Summary:
    head: _Access  # shared accesses before the first barrier
    tail: _Access  # shared accesses after the last barrier
    synced: bool  # a barrier on every path


class _Planner:
    def __init__(self, shared: set[E.Var], tvars: set[E.Var], names: dict[E.Var, str]):
        self.shared, self.tvars, self.names = shared, tvars, names
        self.divergent: E.Expr | None = None  # the innermost thread-dependent condition

    def reads(self, node) -> set[E.Var]:
        loads = collect(node, lambda n: isinstance(n, E.BufferLoad))
        return {ld.buffer.data for ld in loads if ld.buffer.data in self.shared}

    def leaf(self, s: S.Stmt) -> tuple[S.Stmt, _Summary]:
        acc = _Access(self.reads(s))
        if isinstance(s, S.BufferStore) and s.buffer.data in self.shared:
            acc.writes.add(s.buffer.data)
        return s, _Summary(acc, acc.copy(), False)

    def barrier_at(self, where: str) -> S.Stmt:
        if self.divergent is not None:
            raise LoweringError(
                f"a barrier is needed {where}, under the thread-dependent condition "
                f"{self.divergent!r}, where not every thread of the block would reach it; "
                "restructure the schedule so shared memory is staged outside that condition"
            )
        return barrier()

    def plan(self, s: S.Stmt) -> tuple[S.Stmt, _Summary]:
        if isinstance(s, S.SeqStmt):
            return self.seq(list(s.seq))
        if isinstance(s, S.For):
            return self.loop(s)
        if isinstance(s, S.IfThenElse):
            return self.branch(s)
        if isinstance(s, (S.Allocate, S.AttrStmt, S.LetStmt)):
            body, summary = self.plan(s.body)
            if isinstance(s, S.LetStmt):
                summary.head.reads |= self.reads(s.value)
            return s.replace(body=body), summary
        if is_barrier(s):
            return s, _Summary(_Access(), _Access(), True)
        return self.leaf(s)

    def seq(self, items: list[S.Stmt]) -> tuple[S.Stmt, _Summary]:
        head, pending, synced = _Access(), _Access(), False
        out: list[S.Stmt] = []
        for item in items:
            new, sm = self.plan(item)
            if pending.conflicts(sm.head):
                out.append(self.barrier_at(f"before a statement reading {self._names(sm.head)}"))
                synced, pending = True, _Access()
            if not synced:
                head |= sm.head
            out.append(new)
            if sm.synced:
                synced, pending = True, sm.tail.copy()
            else:
                pending |= sm.tail
        return S.seq(*out), _Summary(head, pending, synced)

    def loop(self, s: S.For) -> tuple[S.Stmt, _Summary]:
        body, sm = self.plan(s.body)
        n = E.as_int(s.extent)
        if (n is None or n > 1) and sm.tail.conflicts(sm.head):
            where = f"at the top of loop '{s.loop_var.name}' ({self._names(sm.head)})"
            body = S.seq(self.barrier_at(where), body)
            tail = sm.tail if sm.synced else _joined(sm.head, sm.tail)
            return s.replace(body=body), _Summary(_Access(), tail, True)
        if n == 0:
            return s.replace(body=body), _Summary(_Access(), _Access(), False)
        return s.replace(body=body), sm

    def branch(self, s: S.IfThenElse) -> tuple[S.Stmt, _Summary]:
        outer = self.divergent
        if outer is None and divergent(s.cond, self.tvars):
            self.divergent = s.cond
        then, st = self.plan(s.then_case)
        other, so = (
            self.plan(s.else_case)
            if s.else_case is not None
            else (None, _Summary(_Access(), _Access(), False))
        )
        self.divergent = outer
        cond_reads = _Access(self.reads(s.cond))
        head = _joined(cond_reads, st.head, so.head)
        tail = _joined(st.tail, so.tail)
        if st.synced != so.synced:  # only one path syncs: what the other did stays pending
            tail |= st.head if not st.synced else so.head
        return s.replace(then_case=then, else_case=other), _Summary(
            head, tail, st.synced and so.synced
        )

    def _names(self, acc: _Access) -> str:
        names = sorted(self.names[v] for v in acc.reads | acc.writes)
        return ", ".join(f"'{n}'" for n in names) or "shared memory"


def _joined(*accs: _Access) -> _Access:
    out = _Access()
    for a in accs:
        out |= a
    return out


def _shared_buffers(body: S.Stmt) -> dict[E.Var, str]:
    allocs = collect(body, lambda n: isinstance(n, S.Allocate) and n.buffer.scope == "shared")
    return {a.buffer.data: a.buffer.name for a in allocs}


def insert_barriers(kernel: S.Stmt) -> S.Stmt:
    """One kernel (thread_extent attributes and all) with its barriers."""
    names = _shared_buffers(kernel)
    if not names:
        return kernel
    _, _, body = launch_extents(kernel)
    new, _ = _Planner(set(names), thread_vars(kernel), names).plan(body)
    return _rewrap(kernel, new)


def _rewrap(kernel: S.Stmt, body: S.Stmt) -> S.Stmt:
    if isinstance(kernel, S.AttrStmt) and kernel.key == "thread_extent":
        return kernel.replace(body=_rewrap(kernel.body, body))
    return body


def inject_barriers(f: S.PrimFunc, ana: Analyzer) -> S.PrimFunc:
    """Barriers in every kernel of a GPU function (after lower_thread_bindings)."""
    allocs, kernels = host_parts(f.body)
    body = S.seq(*(insert_barriers(k) for k in kernels))
    for buf in reversed(allocs):
        body = S.Allocate(buf, body)
    return f.replace(body=body)
