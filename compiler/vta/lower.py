"""Lowering a scheduled loop nest to accelerator instructions.

Shapes are static, so the host loops run here, at compile time: the walk visits every host
iteration and turns each `dma_copy` nest into LOAD/STORE, each tensorized GEMM nest into GEMM
and each `alu` nest or ALU-tensorized nest into ALU instructions. A virtual-thread loop runs its
body once per thread, interleaved statement by statement, each thread with its own SRAM
buffers; dependence tokens are added afterwards (tokens.py). SRAM is allocated lazily at a
buffer's first write, so an alu stage can update its input's rows in place instead of holding a
second copy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vta.isa import MemType, Module

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from .dma import dma_ops
from .environment import (
    ALU,
    ALU_CALL,
    DMA_COPY,
    GEMM_CALL,
    GEMM_RESET_CALL,
    SCOPE_MEM,
    Environment,
)
from .evaluate import Loop, evaluate
from .sram import SramAllocator
from .tokens import Op
from .uop import alu_intrin_ops, alu_ops, gemm_ops

KERNEL_CALLS = (GEMM_CALL, GEMM_RESET_CALL, ALU_CALL)


@dataclass
class Ctx:
    """One virtual thread at one host iteration: loop values and the thread's SRAM rows."""

    vars: dict[E.Var, int]
    rows: dict[E.Var, int] = field(default_factory=dict)
    owned: set[E.Var] = field(default_factory=set)
    dead: set[E.Var] = field(default_factory=set)

    def at(self, var: E.Var, value: int) -> Ctx:
        return Ctx({**self.vars, var: value}, self.rows, self.owned, self.dead)

    def thread(self, var: E.Var, value: int) -> Ctx:
        return Ctx({**self.vars, var: value}, dict(self.rows), set(self.owned), set(self.dead))


def _kernel_calls(leaf: S.Stmt) -> list[E.Call]:
    """The GEMM / ALU intrinsic calls a tensorized nest ends in (empty if it is not one)."""
    stmts = leaf.seq if isinstance(leaf, S.SeqStmt) else (leaf,)
    calls = [s.value for s in stmts if isinstance(s, S.Evaluate)]
    ok = len(calls) == len(stmts) and all(
        isinstance(c, E.Call) and c.op in KERNEL_CALLS for c in calls
    )
    return calls if ok else []


def _is_dma(s: S.Stmt) -> bool:
    return isinstance(s, S.AttrStmt) and s.key == "pragma_" + DMA_COPY


class Lowering:
    """Walks a flattened PrimFunc and collects the instructions (`ops`) it stands for."""

    def __init__(self, env: Environment, params: list[S.Buffer]):
        self.env = env
        self.sram = SramAllocator(env)
        self.params = {b.data: b for b in params}
        self.roles: dict[str, str] = {}
        self.ops: list[Op] = []
        self.out_valid = np.zeros(env.config.depth[MemType.ACC], dtype=bool)

    # ---- SRAM rows -----------------------------------------------------------------------
    def row(self, ctx: Ctx, buf: S.Buffer) -> int:
        """First row of `buf` in its scope for this thread (allocated at first use)."""
        if buf.data in ctx.dead:
            raise LoweringError(
                f"'{buf.name}' is read after an alu stage updated its rows in place; "
                "read the alu stage's output instead"
            )
        if buf.data not in ctx.rows:
            if buf.scope not in SCOPE_MEM:
                raise LoweringError(f"'{buf.name}' in scope {buf.scope} is not an SRAM buffer")
            rows = math.ceil(buf.shape[0].value / self.env.lanes(buf.scope))
            ctx.rows[buf.data] = self.sram.alloc(buf.scope, rows, buf.name)
            ctx.owned.add(buf.data)
        return ctx.rows[buf.data]

    def alias(self, ctx: Ctx, dst: S.Buffer, src: S.Buffer, offset: int) -> None:
        """`dst` lives in `src`'s rows (shifted by `offset`); `src` is dead afterwards."""
        if dst.data is src.data:
            if offset:
                raise LoweringError(f"alu into '{dst.name}' must update elements in place")
            return
        row = ctx.rows[src.data] + offset
        if ctx.rows.setdefault(dst.data, row) != row:
            raise LoweringError(
                f"alu into '{dst.name}' must update '{src.name}' in place, but '{dst.name}' "
                "already holds other rows"
            )
        ctx.dead.add(src.data)

    def dram(self, buf: S.Buffer, role: str) -> str:
        if buf.data not in self.params:
            raise LoweringError(
                f"'{buf.name}' is an intermediate DRAM tensor; the accelerator reads and writes "
                "only the function's arguments (put intermediates in an SRAM scope)"
            )
        if self.roles.setdefault(buf.name, role) != role and "output" in (
            role,
            self.roles[buf.name],
        ):
            raise LoweringError(f"'{buf.name}' is both read and written by the accelerator")
        return buf.name

    # ---- instructions ---------------------------------------------------------------------
    def add(self, op: Op) -> None:
        """Append `op`; a store of rows last written by an ACC load gets an ALU copy first
        (STORE reads OUT, which only GEMM and ALU write)."""
        for mem, lo, hi in op.reads:
            if mem == MemType.OUT and not self.out_valid[lo:hi].all():
                copy = Op(
                    Module.COMPUTE,
                    "alu",
                    dict(op="SHR", uops=[(lo, lo)], loops=[(hi - lo, 1, 1)], use_imm=True, imm=0),
                    writes=[(MemType.OUT, lo, hi)],
                )
                self.add(copy)
        for mem, lo, hi in op.writes:
            if mem in (MemType.OUT, MemType.ACC):
                self.out_valid[lo:hi] = mem == MemType.OUT
        self.ops.append(op)

    # ---- statements -----------------------------------------------------------------------
    def run(self, s: S.Stmt, ctxs: list[Ctx]) -> None:
        fn = getattr(self, "run_" + type(s).__name__, None)
        if fn is None:
            raise LoweringError(f"the VTA target cannot lower {type(s).__name__}: {s!r}")
        fn(s, ctxs)

    def run_SeqStmt(self, s: S.SeqStmt, ctxs: list[Ctx]) -> None:
        """Statement by statement for all threads, except that a run of adjacent DMA copies goes
        thread by thread: one thread's loads complete together, so its compute can start while
        the next thread's loads are in flight (and its next loads wait only for its compute)."""
        k = 0
        while k < len(s.seq):
            run = 1
            while k + run < len(s.seq) and all(_is_dma(x) for x in s.seq[k : k + run + 1]):
                run += 1
            for group in [[c] for c in ctxs] if run > 1 else [ctxs]:
                for x in s.seq[k : k + run]:
                    self.run(x, group)
            k += run

    def run_LetStmt(self, s: S.LetStmt, ctxs: list[Ctx]) -> None:
        self.run(s.body, [c.at(s.var, int(evaluate(s.value, c.vars))) for c in ctxs])

    def run_Evaluate(self, s: S.Evaluate, ctxs: list[Ctx]) -> None:
        if not E.is_const(s.value):
            self.leaf([], s, ctxs, None)

    def run_BufferStore(self, s: S.BufferStore, ctxs: list[Ctx]) -> None:
        self.leaf([], s, ctxs, None)

    def run_IfThenElse(self, s: S.IfThenElse, ctxs: list[Ctx]) -> None:
        taken = [bool(evaluate(s.cond, c.vars)) for c in ctxs]
        self.run(s.then_case, [c for c, t in zip(ctxs, taken, strict=True) if t])
        if s.else_case is not None:
            self.run(s.else_case, [c for c, t in zip(ctxs, taken, strict=True) if not t])

    def run_Allocate(self, s: S.Allocate, ctxs: list[Ctx]) -> None:
        if s.buffer.scope not in SCOPE_MEM:
            raise LoweringError(
                f"'{s.buffer.name}' is allocated in scope {s.buffer.scope}; on the accelerator "
                f"intermediates live in {', '.join(SCOPE_MEM)} (use set_scope or cache_read/write)"
            )
        self.run(s.body, ctxs)
        for c in ctxs:
            if s.buffer.data in c.owned:
                self.sram.free(s.buffer.scope, c.rows[s.buffer.data])
                c.owned.discard(s.buffer.data)
            c.rows.pop(s.buffer.data, None)
            c.dead.discard(s.buffer.data)

    def run_AttrStmt(self, s: S.AttrStmt, ctxs: list[Ctx]) -> None:
        pragma = s.key.removeprefix("pragma_")
        if pragma in (DMA_COPY, ALU):
            loops, leaf = self.nest(s.body)
            self.leaf(loops, leaf, ctxs, pragma)
        else:
            self.run(s.body, ctxs)

    def run_For(self, s: S.For, ctxs: list[Ctx]) -> None:
        if s.kind == "vthread":
            n = E.as_int(s.extent)
            self.run(s.body, [c.thread(s.loop_var, t) for c in ctxs for t in range(n)])
            return
        loops, leaf = self.nest(s)
        if _kernel_calls(leaf):
            self.leaf(loops, leaf, ctxs, None)
            return
        extents = {int(evaluate(s.extent, c.vars)) for c in ctxs}
        if len(extents) > 1:
            raise LoweringError(
                f"loop '{s.loop_var.name}' has a different extent per virtual thread"
            )
        for v in range(extents.pop() if extents else 0):
            self.run(s.body, [c.at(s.loop_var, v) for c in ctxs])

    @staticmethod
    def nest(s: S.Stmt) -> tuple[list[Loop], S.Stmt]:
        """The perfect loop nest at `s` and the statement inside it."""
        loops = []
        while isinstance(s, (S.For, S.AttrStmt)):
            if isinstance(s, S.For):
                ext = E.as_int(s.extent)
                if s.kind == "vthread" or ext is None or not E.is_const(s.min, 0):
                    raise LoweringError(
                        f"loop '{s.loop_var.name}' inside an accelerator operation must be a "
                        "constant range starting at 0 (not a virtual thread)"
                    )
                loops.append(Loop(s.loop_var, ext))
            s = s.body
        return loops, s

    def leaf(self, loops: list[Loop], leaf: S.Stmt, ctxs: list[Ctx], pragma: str | None) -> None:
        """One accelerator operation (per thread): a DMA copy, an ALU chain, or a nest
        tensorized with the GEMM or an ALU intrinsic."""
        calls = _kernel_calls(leaf)
        if pragma is None and calls:
            for call in calls:
                for c in ctxs:
                    row = lambda b, c=c: self.row(c, b)  # noqa: E731
                    if call.op == ALU_CALL:
                        alias = lambda d, s, o, c=c: self.alias(c, d, s, o)  # noqa: E731
                        ops = alu_intrin_ops(self.env, loops, call, c.vars, row, alias)
                    else:
                        ops = gemm_ops(self.env, loops, call, c.vars, row)
                    for op in ops:
                        self.add(op)
            return
        if not isinstance(leaf, S.BufferStore) or pragma is None:
            where = f"writing '{leaf.buffer.name}'" if isinstance(leaf, S.BufferStore) else ""
            raise LoweringError(
                f"statement {where or repr(leaf)} is not an accelerator operation: mark copies "
                f"with pragma '{DMA_COPY}', elementwise local.acc_buffer stages with pragma "
                f"'{ALU}' (or tensorize them with env.alu_intrin), and tensorize the GEMM with "
                "env.gemm (as one perfect nest)"
            )
        for c in ctxs:
            row = lambda b, c=c: self.row(c, b)  # noqa: E731
            if pragma == DMA_COPY:
                ops = dma_ops(self.env, loops, leaf, c.vars, row, self.dram)
            else:
                alias = lambda d, s, o, c=c: self.alias(c, d, s, o)  # noqa: E731
                ops = alu_ops(self.env, loops, leaf, c.vars, row, alias)
            for op in ops:
                self.add(op)
