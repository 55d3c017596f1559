"""Micro-op kernels: a tensorized GEMM nest or an `alu` nest becomes GEMM/ALU instructions whose
micro-ops enumerate the inner loops and whose iter_out/iter_in fold up to two affine loops."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from vta.config import VTAConfig
from vta.isa import (
    ALU_IMM_WIDTH,
    LOOP_ITER_WIDTH,
    REQ_SHIFT_MASK,
    MemType,
    Module,
    requant_bounds,
    requant_imm,
)

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from .dma import to_elements
from .environment import (
    ACC_SCOPE,
    GEMM_RESET_CALL,
    IMM_RANGE,
    SHL_CALL,
    SHR_CALL,
    Environment,
)
from .evaluate import Loop, affine
from .tokens import Op

ALU_OPCODE = {E.Min: "MIN", E.Max: "MAX", E.Add: "ADD", E.Sub: "ADD", E.Mul: "MUL"}
UopLoop = tuple[int, list[int]]  # (extent, factor per micro-op column)


def _fold_ok(loop: UopLoop, widths: list[int]) -> bool:
    ext, factors = loop
    return ext < (1 << LOOP_ITER_WIDTH) and all(
        0 <= f < (1 << w) for f, w in zip(factors, widths, strict=True)
    )


def _hazard(uops: np.ndarray, folded: list[UopLoop]) -> bool:
    """Would two consecutive GEMM micro-ops of the instruction write the same ACC row?"""
    dst = uops[:, 0]
    for ext, factors in reversed(folded):
        dst = (dst[None, :] + factors[0] * np.arange(ext)[:, None]).reshape(-1)
    return bool((dst[1:] == dst[:-1]).any())


def plan_kernel(
    loops: list[UopLoop], widths: list[int], cap: int, gemm: bool
) -> tuple[int, tuple[int, ...]]:
    """(host loops, folded loop indices) with the smallest kernel that fits `cap` micro-ops."""
    for host in range(len(loops) + 1):
        rest = list(range(host, len(loops)))
        options = [c for n in (2, 1, 0) for c in itertools.combinations(rest, n)]
        options = [c for c in options if all(_fold_ok(loops[k], widths) for k in c)]
        options.sort(key=lambda c: math.prod(loops[k][0] for k in rest if k not in c))
        for fold in options:
            size = math.prod(loops[k][0] for k in rest if k not in fold)
            if size > cap:
                break
            if gemm and _hazard(
                _uops(loops, host, fold, [0] * len(widths)), [loops[k] for k in fold]
            ):
                continue
            return host, fold
    raise LoweringError(
        f"no micro-op kernel of at most {cap} entries without a GEMM write hazard for loops "
        f"{[ext for ext, _ in loops]}; reorder the loops or choose other tiles"
    )


def _uops(loops: list[UopLoop], host: int, fold: tuple[int, ...], base: list[int]) -> np.ndarray:
    inner = [loops[k] for k in range(host, len(loops)) if k not in fold]
    uops = np.array([base], dtype=np.int64)
    for ext, factors in inner:
        step = np.arange(ext)[:, None] * np.array(factors)[None, :]
        uops = (uops[:, None, :] + step[None, :, :]).reshape(-1, len(base))
    return uops


def _rows(uops: np.ndarray, folded: list[UopLoop], col: int) -> tuple[int, int]:
    lo, hi = int(uops[:, col].min()), int(uops[:, col].max())
    return lo, hi + 1 + sum((ext - 1) * f[col] for ext, f in folded)


def kernel_ops(
    env: Environment,
    loops: list[UopLoop],
    base: list[int],
    make: Callable[[np.ndarray, list[tuple[int, ...]], list[UopLoop]], Op],
    widths: list[int],
    gemm: bool,
) -> list[Op]:
    """One instruction per host iteration: micro-ops for the inner loops, two loops folded."""
    loops = [lp for lp in loops if lp[0] > 1]
    host, fold = plan_kernel(loops, widths, env.config.depth[MemType.UOP] // 8, gemm)
    folded = [loops[k] for k in fold]
    ops = []
    for idx in np.ndindex(*[ext for ext, _ in loops[:host]]):
        b = [c + sum(i * loops[k][1][j] for k, i in enumerate(idx)) for j, c in enumerate(base)]
        uops = _uops(loops, host, fold, b)
        ops.append(make(uops, [(ext, *f) for ext, f in folded], folded))
    return ops


def _element(fit: tuple[int, list[int]], lanes: int, what: str) -> tuple[int, list[int]]:
    """A micro-op address fit (whole elements apart: the lanes are inside the intrinsic)."""
    base, strides = fit
    if base % lanes or any(s % lanes for s in strides):
        raise LoweringError(f"{what}: an address is not aligned to a {lanes}-lane element")
    return base // lanes, [s // lanes for s in strides]


def gemm_ops(
    env: Environment,
    nest: list[Loop],
    call: E.Call,
    host: dict[E.Var, int],
    sram_row: Callable[[S.Buffer], int],
) -> list[Op]:
    """GEMM instructions for one instance of a tensorized nest (`vta.gemm` / `vta.gemm_reset`)."""
    what = f"GEMM micro-op loops ({', '.join(lp.name for lp in nest)})"
    reset = call.op == GEMM_RESET_CALL
    base, factors = [], []
    for ptr in call.args:
        load = ptr.args[0]
        fit = affine(load.indices[0], nest, host, what)
        b, f = _element(fit, env.lanes(load.buffer.scope), what)
        base.append(sram_row(load.buffer) + b)
        factors.append(f)
    if reset:
        base += [0, 0]
        factors += [[0] * len(nest)] * 2
    loops = [(lp.extent, [f[k] for f in factors]) for k, lp in enumerate(nest)]
    ld = env.config.log_depth

    def make(uops: np.ndarray, fields: list, folded: list[UopLoop]) -> Op:
        reads = (
            []
            if reset
            else [(MemType.INP, *_rows(uops, folded, 1)), (MemType.WGT, *_rows(uops, folded, 2))]
        )
        return Op(
            Module.COMPUTE,
            "gemm",
            dict(uops=uops, loops=fields, reset=reset),
            reads=reads,
            writes=[(MemType.OUT, *_rows(uops, folded, 0))],
        )

    return kernel_ops(
        env, loops, base, make, [ld[MemType.ACC], ld[MemType.INP], ld[MemType.WGT]], gemm=True
    )


Step = tuple[str, int | None, E.BufferLoad | None]  # (opcode, immediate, ACC operand)


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
            return root, [*steps, ("SHR", amount if e.op == SHR_CALL else -amount, None)]
        if e.op == SHR_CALL and _acc_operand(e.args[1]):
            return root, [*steps, ("SHR", None, e.args[1])]
    opcode = ALU_OPCODE.get(type(e))
    if opcode == "MUL" and not config_mul:
        raise LoweringError(f"alu: {e!r} needs ALU multiply, which this configuration lacks")
    if opcode is not None:
        a, b = e.a, e.b
        if E.as_int(a) is not None and not isinstance(e, E.Sub):
            a, b = b, a
        imm = E.as_int(b)
        if imm is not None:
            root, steps = alu_chain(a, config_mul)
            return root, [*steps, (opcode, -imm if isinstance(e, E.Sub) else imm, None)]
        if not isinstance(e, E.Sub):
            for x, y in ((a, b), (b, a)):
                if _acc_operand(y):
                    root, steps = alu_chain(x, config_mul)
                    return root, [*steps, (opcode, None, y)]
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
    if len(steps) < 2 or {op for op, _, _ in steps[-2:]} != {"MAX", "MIN"}:
        return steps
    bounds = {op: imm for op, imm, _ in steps[-2:]}
    if bounds["MIN"] != hi or bounds["MAX"] not in (0, lo_full):
        return steps
    rest, shift, addend = steps[:-2], 0, None
    op, imm, operand = rest[-1] if rest else (None, None, None)
    if op == "SHR" and imm is not None and 0 <= imm <= REQ_SHIFT_MASK:
        shift, rest = imm, rest[:-1]
    op, imm, operand = rest[-1] if rest else (None, None, None)
    if op == "ADD" and (operand is not None or imm == 0):
        addend, rest = operand, rest[:-1]
    return [*rest, ("REQ", requant_imm(shift, relu=bounds["MAX"] == 0), addend)]


def alu_steps(e: E.Expr, config: VTAConfig) -> tuple[E.BufferLoad, list[Step]]:
    """`alu_chain` with a requantizing tail fused into REQ where the configuration has it."""
    root, steps = alu_chain(e, config.alu_mul)
    return root, fuse_requant(steps, config.out_width) if config.alu_requant else steps


Operand = tuple[S.Buffer, tuple[int, list[int]]]  # an ACC buffer and its element fit


def _alu_kernels(
    env: Environment,
    what: str,
    extents: list[int],
    dst: Operand,
    root: Operand,
    steps: list[tuple[str, int | None, Operand | None]],
    sram_row: Callable[[S.Buffer], int],
    alias: Callable[[S.Buffer, S.Buffer, int], None],
) -> list[Op]:
    """ALU instructions applying `steps` to `root`'s rows in place, which then hold `dst`."""
    (dbuf, (db, ds)), (rbuf, (rb, rs)) = dst, root
    if ds != rs:
        raise LoweringError(
            f"{what}: it must write where it reads '{rbuf.name}' (ALU ops work in place); "
            "give both the same index pattern"
        )
    for opcode, imm, _ in steps:
        if imm is not None and not IMM_RANGE[0] <= imm <= IMM_RANGE[1]:
            raise LoweringError(
                f"{what}: {opcode} immediate {imm} does not fit the ALU's "
                f"{ALU_IMM_WIDTH}-bit field (valid: {IMM_RANGE[0]}..{IMM_RANGE[1]})"
            )
    row0 = sram_row(rbuf) + rb
    srcs = [None if x is None else (sram_row(x[0]) + x[1][0], x[1][1]) for *_, x in steps]
    alias(dbuf, rbuf, rb - db)
    ld = env.config.log_depth
    ops: list[Op] = []
    for (opcode, imm, _), src in zip(steps, srcs, strict=True):
        src0, sst = src or (row0, rs)
        loops = [(n, [d, s]) for n, d, s in zip(extents, rs, sst, strict=True)]

        def make(
            uops: np.ndarray,
            fields: list,
            folded: list[UopLoop],
            opcode=opcode,
            imm=imm,
            use_imm=src is None,
        ) -> Op:
            return Op(
                Module.COMPUTE,
                "alu",
                dict(op=opcode, uops=uops, loops=fields, use_imm=use_imm, imm=imm or 0),
                writes=[(MemType.OUT, *_rows(uops, folded, 0))],
            )

        ops += kernel_ops(
            env, loops, [row0, src0], make, [ld[MemType.ACC], ld[MemType.ACC]], gemm=False
        )
    return ops


def alu_ops(
    env: Environment,
    nest: list[Loop],
    store: S.BufferStore,
    host: dict[E.Var, int],
    sram_row: Callable[[S.Buffer], int],
    alias: Callable[[S.Buffer, S.Buffer, int], None],
) -> list[Op]:
    """ALU instructions for one instance of an `alu` pragma nest, updating its source rows in
    place."""
    what = f"alu into '{store.buffer.name}'"
    if store.buffer.scope != ACC_SCOPE:
        raise LoweringError(f"{what}: alu stages compute in {ACC_SCOPE}, not {store.buffer.scope}")
    root, steps = alu_steps(store.value, env.config)
    loads = [root] + [s[2] for s in steps if s[2] is not None]
    fits = [affine(x.indices[0], nest, host, what) for x in [store, *loads]]
    kept, elems = to_elements(nest, fits, env.lanes(ACC_SCOPE), what)
    operands = {id(x): (x.buffer, f) for x, f in zip(loads, elems[1:], strict=True)}
    return _alu_kernels(
        env,
        what,
        [nest[k].extent for k in kept],
        (store.buffer, elems[0]),
        operands[id(root)],
        [(op, imm, None if x is None else operands[id(x)]) for op, imm, x in steps],
        sram_row,
        alias,
    )


def alu_intrin_ops(
    env: Environment,
    nest: list[Loop],
    call: E.Call,
    host: dict[E.Var, int],
    sram_row: Callable[[S.Buffer], int],
    alias: Callable[[S.Buffer, S.Buffer, int], None],
) -> list[Op]:
    """ALU instructions for one instance of a nest tensorized with an ALU intrinsic
    (`vta.alu(opcode, dst, src, immediate or operand)`), updating `src` in place."""
    what = f"ALU micro-op loops ({', '.join(lp.name for lp in nest)})"
    opcode, *ptrs, operand = call.args
    imm = E.as_int(operand)
    loads = [p.args[0] for p in ptrs] + ([] if imm is not None else [operand.args[0]])
    lanes = env.lanes(ACC_SCOPE)
    fits = [
        (x.buffer, _element(affine(x.indices[0], nest, host, what), lanes, what)) for x in loads
    ]
    kept = [k for k, lp in enumerate(nest) if lp.extent > 1]
    fits = [(b, (base, [st[k] for k in kept])) for b, (base, st) in fits]
    step = (opcode.value, imm, fits[2] if imm is None else None)
    extents = [nest[k].extent for k in kept]
    return _alu_kernels(env, what, extents, fits[0], fits[1], [step], sram_row, alias)
