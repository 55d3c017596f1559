"""GPU thread bindings: loops bound to blockIdx/threadIdx become kernels with launch extents.

Each root statement of a GPU function is one kernel. Its loops bound to a thread axis turn into
that axis's hardware index (one variable per tag, shared by every loop bound to it, as TVM's
thread_extent attributes): the launch extent of a tag is the largest loop bound to it, and a
loop with a smaller extent runs under `index < extent` (a cooperative fetch with fewer rows
than the block has threads). The kernel body is wrapped in `thread_extent` attributes, outer
blocks first, which `kernels()` reads back as launch dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...arith import Analyzer
from ...errors import LoweringError
from .. import expr as E
from .. import stmt as S
from ..functor import Mutator, collect, substitute, uses_var

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
LAUNCH_TAGS = BLOCK_TAGS + THREAD_TAGS
BARRIER = "tir.tvm_storage_sync"


def barrier() -> S.Stmt:
    """__syncthreads(): every thread of the block waits here; shared memory is then ordered."""
    return S.Evaluate(E.Call("void", BARRIER, [E.StringImm("shared")]))


def is_barrier(s: S.Stmt) -> bool:
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == BARRIER


def _where(var: E.Var, origin: dict[E.Var, str]) -> str:
    return origin.get(var, f"loop '{var.name}'")


@dataclass
class _Kernel:
    """Launch extents and hardware index variables of one kernel being lowered."""

    origin: dict[E.Var, str]
    extent: dict[str, int] = field(default_factory=dict)
    var: dict[str, E.Var] = field(default_factory=dict)


def _launch_extents(stmt: S.Stmt, k: _Kernel) -> None:
    """Largest extent per tag; nested loops of one tag must fit the enclosing one."""

    def walk(s: S.Stmt, outer: dict[str, tuple[int, E.Var]]) -> None:
        if isinstance(s, S.For) and s.kind == "thread_binding":
            tag, ext = s.thread_tag, E.as_int(s.extent)
            where = _where(s.loop_var, k.origin)
            if tag not in LAUNCH_TAGS:
                raise LoweringError(
                    f"{where} is bound to {tag!r}; valid GPU axes: {', '.join(LAUNCH_TAGS)}"
                )
            if ext is None or not E.is_const(s.min, 0):
                raise LoweringError(f"{where} is bound to {tag} but has no constant extent")
            if tag in outer and ext > outer[tag][0]:
                raise LoweringError(
                    f"{where} is bound to {tag} with extent {ext}, inside "
                    f"{_where(outer[tag][1], k.origin)} bound to it with extent {outer[tag][0]}; "
                    f"the block has only {outer[tag][0]} such threads"
                )
            if tag in BLOCK_TAGS and any(t in outer for t in THREAD_TAGS):
                raise LoweringError(f"{where} is bound to {tag} inside a threadIdx loop")
            k.extent[tag] = max(k.extent.get(tag, 0), ext)
            outer = {**outer, tag: (ext, s.loop_var)}
        for c in _children(s):
            walk(c, outer)

    walk(stmt, {})


def _children(s: S.Stmt) -> list[S.Stmt]:
    if isinstance(s, S.SeqStmt):
        return list(s.seq)
    if isinstance(s, S.IfThenElse):
        return [c for c in (s.then_case, s.else_case) if c is not None]
    if isinstance(s, (S.For, S.Allocate, S.AttrStmt, S.LetStmt)):
        return [s.body]
    return []


class _Bind(Mutator):
    """Thread-bound loops -> the tag's index variable (guarded when the loop is shorter);
    statements outside every thread loop are an error (every thread would run them)."""

    def __init__(self, k: _Kernel, ana: Analyzer):
        self.k, self.ana = k, ana
        self.depth = 0

    def visit_For(self, s: S.For) -> S.Stmt:
        if s.kind != "thread_binding":
            if self.depth == 0:
                return self._host_loop(s)
            return self.generic(s)
        tag = s.thread_tag
        ext = E.as_int(s.extent)
        self.depth += 1
        body = self.visit(substitute(s.body, {s.loop_var: self.k.var[tag]}))
        self.depth -= 1
        if ext < self.k.extent[tag]:
            body = S.IfThenElse(self.k.var[tag] < ext, body)
        return body

    def _host_loop(self, s: S.For) -> S.Stmt:
        """A loop outside the thread loops: gone when it runs once, else an error."""
        if E.as_int(s.extent) == 1:
            return self.visit(substitute(s.body, {s.loop_var: s.min}))
        raise LoweringError(
            f"{_where(s.loop_var, self.k.origin)} (extent {s.extent}) encloses the kernel's "
            "thread loops; bind it to a blockIdx axis (or fuse it into one)"
        )

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        if self.depth == 0:
            raise LoweringError(
                f"the store to '{s.buffer.name}' is outside every loop bound to "
                "blockIdx/threadIdx, so every GPU thread would run it; bind the stage's loops"
            )
        return s


def _kernel(stmt: S.Stmt, ana: Analyzer, origin: dict[E.Var, str]) -> S.Stmt:
    k = _Kernel(origin)
    _launch_extents(stmt, k)
    if not k.extent:
        names = sorted({st.buffer.name for st in collect(stmt, _is_store)})
        raise LoweringError(
            f"stage {', '.join(repr(n) for n in names)} has no loop bound to blockIdx/threadIdx; "
            "a GPU schedule binds every root stage's outer loops (split, then bind)"
        )
    for tag in k.extent:
        k.var[tag] = E.Var(tag)
        ana.bind(k.var[tag], 0, k.extent[tag] - 1)
    body = _Bind(k, ana).visit(stmt)
    for tag in reversed(LAUNCH_TAGS):
        if tag in k.extent:
            body = S.AttrStmt(k.var[tag], "thread_extent", k.extent[tag], body)
    return body


def _is_store(n) -> bool:
    return isinstance(n, S.BufferStore)


def host_parts(body: S.Stmt) -> tuple[list[S.Buffer], list[S.Stmt]]:
    """The buffers a GPU function allocates at root (device memory between kernels) and its
    root statements, one per kernel."""
    allocs = []
    while isinstance(body, S.Allocate):
        allocs.append(body.buffer)
        body = body.body
    while isinstance(body, S.AttrStmt) and body.key != "thread_extent":
        body = body.body  # pragmas of a root stage: nothing to do on the host
    return allocs, list(body.seq) if isinstance(body, S.SeqStmt) else [body]


def lower_thread_bindings(
    f: S.PrimFunc, ana: Analyzer, origin: dict[E.Var, str] | None = None
) -> S.PrimFunc:
    """Each root statement becomes a kernel wrapped in thread_extent attributes."""
    allocs, stmts = host_parts(f.body)
    body = S.seq(*(_kernel(s, ana, origin or {}) for s in stmts))
    for buf in reversed(allocs):
        body = S.Allocate(buf, body)
    return f.replace(body=body)


def launch_extents(kernel: S.Stmt) -> tuple[dict[str, int], dict[str, E.Var], S.Stmt]:
    """(extent per tag, index variable per tag, body inside the attributes) of a kernel."""
    ext, var = {}, {}
    while isinstance(kernel, S.AttrStmt) and kernel.key == "thread_extent":
        ext[kernel.node.name] = E.as_int(kernel.value)
        var[kernel.node.name] = kernel.node
        kernel = kernel.body
    return ext, var, kernel


def thread_vars(kernel: S.Stmt) -> set[E.Var]:
    """The threadIdx variables of a kernel (values that differ between threads of a block)."""
    _, var, _ = launch_extents(kernel)
    return {v for tag, v in var.items() if tag in THREAD_TAGS}


def divergent(cond: E.Expr, tvars: set[E.Var]) -> bool:
    return any(uses_var(cond, v) for v in tvars)
