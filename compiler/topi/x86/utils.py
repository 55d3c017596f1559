"""Pieces shared by the x86 schedules of reductions."""

from __future__ import annotations

from ...codegen.target import CPUFacts, cpu_facts
from ...errors import OperatorError
from ...schedule.schedule import Schedule
from ...te.tensor import ComputeOp, Tensor
from .. import tag
from .injective import schedule_injective_from_existing


def accumulator(s: Schedule, red: Tensor, out: Tensor) -> Tensor:
    """The reduction computed into a "local" buffer (registers after LLVM's SROA) that the
    output stage stores from: a cache_write when the reduction is the output, else the
    reduction stage itself with the injective ops after it (elementwise, or a slice of it)
    inlined into the output."""
    if red.op is out.op:
        return s.cache_write(red, "local")
    if out.ndim != red.ndim:
        raise OperatorError(f"output '{out.name}' must index '{red.name}' elementwise")
    s[red].set_scope("local")
    return red


def register_tile(s: Schedule, acc: Tensor) -> None:
    """Reductions outermost, then the data axes: the last vectorized, the others unrolled."""
    *rows, cols = s[acc].op.axis
    s[acc].reorder(*s[acc].op.reduce_axis, *rows, cols)
    for r in rows:
        s[acc].unroll(r)
    s[acc].vectorize(cols)


def schedule_pad(s: Schedule, conv: ComputeOp) -> None:
    """The padded input is computed once, at root, in parallel (no branches in the kernel)."""
    data = conv.input_tensors[0]
    if isinstance(data.op, ComputeOp) and data.op.tag == tag.INJECTIVE:
        s[data].compute_root()  # traverse_inline inlined it with the other injective ops
        schedule_injective_from_existing(s, data)


def register_block(facts: CPUFacts | None = None, max_rows: int = 16) -> tuple[int, int]:
    """(rows, vectors per row) of a register tile of accumulators for the target: each step of
    the reduction loads `vectors` weight vectors and broadcasts `rows` inputs for rows x vectors
    FMAs, so the fewest loads per FMA (1/rows + 1/vectors) with every accumulator, the weight
    vectors and one broadcast in registers (vectors a power of two). 6 x 4 on AVX-512 (32
    registers), 6 x 2 on AVX2 (16)."""
    regs = (facts or cpu_facts()).vector_registers
    best = (1, 1)
    for vecs in (1, 2, 4, 8):
        rows = min(max_rows, (regs - vecs - 1) // vecs)
        if rows >= 1 and 1 / rows + 1 / vecs < 1 / best[0] + 1 / best[1]:
            best = (rows, vecs)
    return best
