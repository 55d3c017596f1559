"""Pass `inject_ops`: the loop IR's accelerator leaf nests become operation templates.

A leaf nest is a `dma_copy` copy, an `alu` stage, or a nest tensorized with the GEMM or an ALU
intrinsic; everything around them (host loops, virtual-thread loops, allocations, branches)
stays, runs at compile time, and is unrolled by the next pass. DRAM tensors the accelerator
touches must be the function's parameters; each gets a role (input, weight, output).
"""

from __future__ import annotations

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import Mutator
from .alu import alu_intrinsic, alu_stage
from .dma import DmaTemplate
from .environment import ALU, ALU_CALL, DMA_COPY, GEMM_CALL, GEMM_RESET_CALL, SCOPE_MEM, Environment
from .evaluate import Loop
from .gemm import GemmTemplate
from .template import OpTemplate

KERNEL_CALLS = (GEMM_CALL, GEMM_RESET_CALL, ALU_CALL)


def _kernel_calls(leaf: S.Stmt) -> list[E.Call]:
    """The GEMM / ALU intrinsic calls a tensorized nest ends in (empty if it is not one)."""
    stmts = leaf.seq if isinstance(leaf, S.SeqStmt) else (leaf,)
    calls = [s.value for s in stmts if isinstance(s, S.Evaluate)]
    ok = len(calls) == len(stmts) and all(
        isinstance(c, E.Call) and c.op in KERNEL_CALLS for c in calls
    )
    return calls if ok else []


def _nest(s: S.Stmt) -> tuple[list[Loop], S.Stmt]:
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


class _Inject(Mutator):
    def __init__(self, env: Environment, params: list[S.Buffer]):
        self.env = env
        self.params = {b.data: b for b in params}
        self.roles: dict[str, str] = {}

    def dram(self, buf: S.Buffer, role: str) -> str:
        """Record that the accelerator reads or writes parameter `buf` in `role`."""
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

    def leaf(self, loops: list[Loop], leaf: S.Stmt, pragma: str | None) -> S.Stmt:
        """The template(s) of one accelerator operation nest."""
        calls = _kernel_calls(leaf)
        if pragma is None and calls:
            return S.seq(
                *(
                    alu_intrinsic(self.env, loops, c)
                    if c.op == ALU_CALL
                    else GemmTemplate(self.env, loops, c)
                    for c in calls
                )
            )
        if not isinstance(leaf, S.BufferStore) or pragma is None:
            where = f"writing '{leaf.buffer.name}'" if isinstance(leaf, S.BufferStore) else ""
            raise LoweringError(
                f"statement {where or repr(leaf)} is not an accelerator operation: mark copies "
                f"with pragma '{DMA_COPY}', elementwise local.acc_buffer stages with pragma "
                f"'{ALU}' (or tensorize them with env.alu_intrin), and tensorize the GEMM with "
                "env.gemm (as one perfect nest)"
            )
        if pragma == DMA_COPY:
            return DmaTemplate(self.env, loops, leaf, self.dram)
        return alu_stage(self.env, loops, leaf)

    def visit_For(self, s: S.For) -> S.Stmt:
        if s.kind == "vthread":
            return self.generic(s)
        loops, leaf = _nest(s)
        if _kernel_calls(leaf):
            return self.leaf(loops, leaf, None)
        return self.generic(s)

    def visit_AttrStmt(self, s: S.AttrStmt) -> S.Stmt:
        pragma = s.key.removeprefix("pragma_")
        if pragma in (DMA_COPY, ALU):
            loops, leaf = _nest(s.body)
            return self.leaf(loops, leaf, pragma)
        return self.generic(s)

    def visit_Evaluate(self, s: S.Evaluate) -> S.Stmt:
        return s if E.is_const(s.value) else self.leaf([], s, None)

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        return self.leaf([], s, None)

    def visit_Allocate(self, s: S.Allocate) -> S.Stmt:
        if s.buffer.scope not in SCOPE_MEM:
            raise LoweringError(
                f"'{s.buffer.name}' is allocated in scope {s.buffer.scope}; on the accelerator "
                f"intermediates live in {', '.join(SCOPE_MEM)} (use set_scope or cache_read/write)"
            )
        return self.generic(s)

    def generic(self, node):
        if isinstance(node, OpTemplate):
            return node
        if isinstance(node, S.Stmt) and not isinstance(
            node, (S.SeqStmt, S.For, S.AttrStmt, S.LetStmt, S.IfThenElse, S.Allocate)
        ):
            raise LoweringError(f"the VTA target cannot lower {type(node).__name__}: {node!r}")
        if isinstance(node, E.Expr):
            return node
        return super().generic(node)


def inject_ops(f: S.PrimFunc, env: Environment) -> S.PrimFunc:
    """`f` with every accelerator operation nest replaced by its template; the DRAM roles of
    the parameters in `attrs["dram_roles"]`."""
    pass_ = _Inject(env, f.params)
    body = pass_.visit(f.body)
    return S.PrimFunc(f.name, f.params, body, {**f.attrs, "dram_roles": pass_.roles})
