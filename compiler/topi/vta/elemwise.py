"""Standalone elementwise operators on the ALU: add, multiply, maximum, minimum and shifts of a
packed int32 tensor (..., BATCH, BLOCK_OUT) by a second such tensor or an immediate, stored as
int8 (the low 8 bits, as the accelerator stores), and their schedule (alu pragma or tensorize)."""

from __future__ import annotations

import math

from ... import te
from ...errors import LoweringError
from ...schedule.schedule import Schedule
from ...topi.utils import largest_divisor
from ...vta.environment import ALU_INTRINS, Environment, get_env

# operator -> ALU intrinsic name (environment.ALU_INTRINS)
OPERATORS = {
    "add": "add",
    "multiply": "mul",
    "maximum": "max",
    "minimum": "min",
    "shift_right": "shr",
    "shift_left": "shl",
}


def elemwise(
    name: str, a: te.Tensor, b: te.Tensor | int, env: Environment | None = None
) -> te.Tensor:
    """int8 res = cast(name(a, b)), computed in one accumulator-scope stage ("vta_alu")."""
    env = env or get_env()
    if name not in OPERATORS:
        raise LoweringError(f"elemwise: '{name}' is unknown (valid: {', '.join(OPERATORS)})")
    lanes = (env.batch, env.block_out)
    if a.dtype != env.acc_dtype or tuple(a.shape[-2:]) != lanes:
        raise LoweringError(
            f"elemwise {name}: '{a.name}' is {a.dtype} {tuple(a.shape)}; the ALU takes "
            f"{env.acc_dtype} tensors packed as (..., {lanes[0]}, {lanes[1]})"
        )
    imm = b if isinstance(b, int) else None
    if imm is None and (b.dtype != a.dtype or tuple(b.shape) != tuple(a.shape)):
        raise LoweringError(
            f"elemwise {name}: operand '{b.name}' is {b.dtype} {tuple(b.shape)}, expected "
            f"{a.dtype} {tuple(a.shape)} (or an integer immediate)"
        )
    intrin = OPERATORS[name]
    if intrin == "shl" and imm is None:
        raise LoweringError(
            "elemwise shift_left: the ALU shifts left by an immediate only; for amounts in a "
            "tensor use shift_right with the amounts negated"
        )
    if intrin == "mul" and not env.config.alu_mul:
        raise LoweringError(
            f"elemwise multiply: configuration {env.config.name!r} has no ALU multiply"
        )
    fop = ALU_INTRINS[intrin][1]
    alu = te.compute(
        a.shape,
        lambda *i: fop(a(*i), b(*i) if imm is None else imm),
        f"{name}_alu",
        tag="vta_alu",
        attrs={"alu_intrin": (intrin, imm)},
    )
    return te.compute(a.shape, lambda *i: alu(*i).astype(env.out_dtype), "res", tag="vta_output")


def add(a: te.Tensor, b: te.Tensor | int, env: Environment | None = None) -> te.Tensor:
    return elemwise("add", a, b, env)


def multiply(a: te.Tensor, b: te.Tensor | int, env: Environment | None = None) -> te.Tensor:
    return elemwise("multiply", a, b, env)


def maximum(a: te.Tensor, b: te.Tensor | int, env: Environment | None = None) -> te.Tensor:
    return elemwise("maximum", a, b, env)


def minimum(a: te.Tensor, b: te.Tensor | int, env: Environment | None = None) -> te.Tensor:
    return elemwise("minimum", a, b, env)


def shift_right(a: te.Tensor, b: te.Tensor | int, env: Environment | None = None) -> te.Tensor:
    return elemwise("shift_right", a, b, env)


def shift_left(a: te.Tensor, b: int, env: Environment | None = None) -> te.Tensor:
    return elemwise("shift_left", a, b, env)


def schedule_elemwise(
    out: te.Tensor,
    tile: int | None = None,
    tensorize: bool = False,
    env: Environment | None = None,
) -> Schedule:
    """Tiles of `tile` slices of axis 0 (default: the most that fit the accumulator buffer):
    operands cache_read into local.acc_buffer by DMA, the ALU stage by the alu pragma or
    tensorized with its ALU intrinsic, the int8 result stored by DMA."""
    env = env or get_env()
    s = te.create_schedule(out.op)
    alu = out.op.input_tensors[0]
    operands = alu.op.input_tensors
    rows = math.prod(alu.shape[1:-2])  # accumulator rows per slice of axis 0
    depth = env.capacity(env.acc_scope) // env.elem_bytes(env.acc_scope)
    tile = tile or largest_divisor(alu.shape[0], max(1, depth // (rows * len(operands))))
    if alu.shape[0] % tile:
        raise LoweringError(
            f"schedule_elemwise: tile {tile} does not divide axis 0 of '{alu.name}' "
            f"(extent {alu.shape[0]})"
        )
    outer, inner = s[out].split(s[out].op.axis[0], tile)
    s[alu].set_scope(env.acc_scope)
    s[alu].compute_at(s[out], outer)
    for t in operands:
        cached = s.cache_read(t, env.acc_scope, [alu])
        s[cached].compute_at(s[out], outer)
        s[cached].pragma(s[cached].op.axis[0], env.dma_copy)
    if tensorize:
        s[alu].tensorize(s[alu].op.axis[-2], env.alu_intrin(*alu.op.attrs["alu_intrin"]))
    else:
        s[alu].pragma(s[alu].op.axis[0], env.alu)
    s[out].pragma(inner, env.dma_copy)
    return s
