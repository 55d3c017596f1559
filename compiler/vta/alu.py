"""ALU templates: an `alu` stage (an elementwise accumulator expression, marked with the pragma)
or a nest tensorized with an ALU intrinsic becomes ALU instructions that update the stage's
input rows in place, one instruction kernel per operation of its chain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from vta.config import VTAConfig
from vta.isa import ALU_IMM_WIDTH, REQ_SHIFT_MASK, AluOp, MemType, requant_bounds, requant_imm

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from .environment import ACC_SCOPE, IMM_RANGE, SHL_CALL, SHR_CALL, Environment
from .evaluate import Loop
from .gemm import Operands
from .kernel import Kernel
from .ops import Alu, Slot
from .template import Alias, Instance, Item, OpTemplate

ALU_OPCODE = {E.Min: AluOp.MIN, E.Max: AluOp.MAX, E.Add: AluOp.ADD, E.Sub: AluOp.ADD}
ALU_OPCODE[E.Mul] = AluOp.MUL


class Step(NamedTuple):
    """One ALU operation of a chain: opcode, immediate (None: a tensor operand) and operand."""

    op: AluOp
    imm: int | None
    operand: E.BufferLoad | None


def _acc_operand(e: E.Expr) -> bool:
    return isinstance(e, E.BufferLoad) and e.buffer.scope == ACC_SCOPE


def alu_chain(e: E.Expr, config_mul: bool) -> tuple[E.BufferLoad, list[Step]]:
    """Split an elementwise expression into the ACC tensor it updates in place and a chain of
    ALU ops, innermost first (shift_right/left, min, max, add, sub of an immediate, mul)."""
    if isinstance(e, E.Cast) and e.value.dtype == e.dtype:
        return alu_chain(e.value, config_mul)
    if _acc_operand(e):
        return e, []
    if isinstance(e, E.Call) and e.op in (SHR_CALL, SHL_CALL):
        root, steps = alu_chain(e.args[0], config_mul)
        amount = E.as_int(e.args[1])
        if amount is not None:
            return root, [*steps, Step(AluOp.SHR, amount if e.op == SHR_CALL else -amount, None)]
        if e.op == SHR_CALL and _acc_operand(e.args[1]):
            return root, [*steps, Step(AluOp.SHR, None, e.args[1])]
    opcode = ALU_OPCODE.get(type(e))
    if opcode == AluOp.MUL and not config_mul:
        raise LoweringError(f"alu: {e!r} needs ALU multiply, which this configuration lacks")
    if opcode is not None:
        a, b = e.a, e.b
        if E.as_int(a) is not None and not isinstance(e, E.Sub):
            a, b = b, a
        imm = E.as_int(b)
        if imm is not None:
            root, steps = alu_chain(a, config_mul)
            return root, [*steps, Step(opcode, -imm if isinstance(e, E.Sub) else imm, None)]
        if not isinstance(e, E.Sub):
            for x, y in ((a, b), (b, a)):
                if _acc_operand(y):
                    root, steps = alu_chain(x, config_mul)
                    return root, [*steps, Step(opcode, None, y)]
    raise LoweringError(
        f"alu: {e!r} is not an ALU operation (valid: min, max, add of an immediate or of an "
        f"{ACC_SCOPE} tensor, sub of an immediate, shift_right by an immediate or a tensor, "
        "shift_left by an immediate" + (", mul" if config_mul else "") + ")"
    )


def fuse_requant(steps: list[Step], out_width: int) -> list[Step]:
    """Replace a chain's tail [ADD of a tensor (or of 0)] [SHR 0..31] MAX lo, MIN hi (either
    order; lo = 0 or the lowest `out_width`-bit value, hi the highest) by one REQ step, which
    carries both the immediate (shift, relu) and the ADD's tensor. Other chains are unchanged."""
    lo_full, hi = requant_bounds(out_width, relu=False)
    if len(steps) < 2 or {op for op, _, _ in steps[-2:]} != {AluOp.MAX, AluOp.MIN}:
        return steps
    bounds = {op: imm for op, imm, _ in steps[-2:]}
    if bounds[AluOp.MIN] != hi or bounds[AluOp.MAX] not in (0, lo_full):
        return steps
    rest, shift, addend = steps[:-2], 0, None
    op, imm, operand = rest[-1] if rest else (None, None, None)
    if op == AluOp.SHR and imm is not None and 0 <= imm <= REQ_SHIFT_MASK:
        shift, rest = imm, rest[:-1]
    op, imm, operand = rest[-1] if rest else (None, None, None)
    if op == AluOp.ADD and (operand is not None or imm == 0):
        addend, rest = operand, rest[:-1]
    return [*rest, Step(AluOp.REQ, requant_imm(shift, relu=bounds[AluOp.MAX] == 0), addend)]


def alu_steps(e: E.Expr, config: VTAConfig) -> tuple[E.BufferLoad, list[Step]]:
    """`alu_chain` with a requantizing tail fused into REQ where the configuration has it."""
    root, steps = alu_chain(e, config.alu_mul)
    return root, fuse_requant(steps, config.out_width) if config.alu_requant else steps


class AluTemplate(OpTemplate):
    """ALU instructions applying `steps` in place to the rows of `root`, which then hold the
    stage's output `dst`. `kept` are the nest loops that span elements."""

    def __init__(
        self,
        env: Environment,
        nest: list[Loop],
        dst: E.BufferLoad,
        root: E.BufferLoad,
        steps: list[Step],
        what: str,
        scalar: bool,
    ):
        self.env, self.what, self.steps = env, what, steps
        for op, imm, _ in steps:
            if imm is not None and not IMM_RANGE[0] <= imm <= IMM_RANGE[1]:
                raise LoweringError(
                    f"{what}: {op.name} immediate {imm} does not fit the ALU's "
                    f"{ALU_IMM_WIDTH}-bit field (valid: {IMM_RANGE[0]}..{IMM_RANGE[1]})"
                )
        # operands: the stage's output, its root, then each step's tensor operand
        loads = [dst, root] + [s.operand for s in steps if s.operand is not None]
        self.operands = Operands(env, nest, loads, what, scalar)
        self.nest = nest
        ld = env.config.log_depth[MemType.ACC]
        self.widths = [ld, ld]
        self.kernels = None
        if self.operands.strides is not None:
            self.kernels = self._plan((self.operands.kept, self.operands.strides))

    def _plan(self, geometry: tuple[list[int], list[list[int]]]) -> list[Kernel]:
        """One kernel per step: (dst, src) micro-ops over the loops that step over elements."""
        kept, strides = geometry
        extents = [self.nest[k].extent for k in kept]
        ds, rs, *operand_strides = strides
        if ds != rs:
            root = self.operands.buffers[1].name
            raise LoweringError(
                f"{self.what}: it must write where it reads '{root}' (ALU ops work in place); "
                "give both the same index pattern"
            )
        cap = self.env.config.depth[MemType.UOP] // 8
        kernels, k = [], 0
        for step in self.steps:
            sst = rs
            if step.operand is not None:
                sst, k = operand_strides[k], k + 1
            loops = [(n, [d, s]) for n, d, s in zip(extents, rs, sst, strict=True)]
            kernels.append(Kernel.plan(loops, self.widths, cap, gemm=False))
        return kernels

    def describe(self) -> str:
        dst, root = self.operands.buffers[:2]
        ops = ", ".join(
            f"{s.op.name} {s.imm if s.operand is None else s.operand.buffer.name}"
            for s in self.steps
        )
        loops = ", ".join(f"{lp.name}:{lp.extent}" for lp in self.nest)
        return f"ALU {dst.name} = {root.name} in place: {ops}  over ({loops})"

    def instantiate(self, instances: Sequence[Instance]) -> list[list[Item]]:
        bases, strides = self.operands.bases(instances)
        out = []
        for inst, base, stride in zip(instances, bases, strides, strict=True):
            kernels = self.kernels or self._plan(stride)
            slots = [Slot(b, inst.thread) for b in self.operands.buffers]
            (dst, root, *operands), (db, rb, *obases) = slots, base
            items: list[Item] = [Alias(dst, root, rb - db)]
            k = 0
            for step, kernel in zip(self.steps, kernels, strict=True):
                # rows relative to dst, which lives in root's rows from the alias on
                src, sb = dst, db
                if step.operand is not None:
                    src, sb, k = operands[k], obases[k], k + 1
                items += [
                    Alu(
                        step.op,
                        uops,
                        kernel.folded,
                        step.operand is None,
                        step.imm or 0,
                        (dst, src),
                    )
                    for uops in kernel.instances([db, sb])
                ]
            out.append(items)
        return out


def alu_stage(env: Environment, nest: list[Loop], store: S.BufferStore) -> AluTemplate:
    """The template of an `alu` pragma nest (an elementwise accumulator-scope stage)."""
    what = f"alu into '{store.buffer.name}'"
    if store.buffer.scope != ACC_SCOPE:
        raise LoweringError(f"{what}: alu stages compute in {ACC_SCOPE}, not {store.buffer.scope}")
    root, steps = alu_steps(store.value, env.config)
    dst = store.buffer[store.indices[0]]
    return AluTemplate(env, nest, dst, root, steps, what, scalar=True)


def alu_intrinsic(env: Environment, nest: list[Loop], call: E.Call) -> AluTemplate:
    """The template of a nest tensorized with an ALU intrinsic:
    `vta.alu(opcode, dst, src, immediate or operand)` updating `src` in place."""
    what = f"ALU micro-op loops ({', '.join(lp.name for lp in nest)})"
    opcode, *ptrs, operand = call.args
    imm = E.as_int(operand)
    dst, root = (p.args[0] for p in ptrs)
    step = Step(AluOp[opcode.value], imm, None if imm is not None else operand.args[0])
    return AluTemplate(env, nest, dst, root, [step], what, scalar=False)
