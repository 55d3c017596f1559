"""Pieces shared by the x86 schedules of reductions."""

from __future__ import annotations

from ...codegen.target import CPUFacts, cpu_facts
from ...errors import OperatorError
from ...schedule.schedule import Schedule
from ...te.tensor import ComputeOp, IterVar, Tensor
from .. import tag
from ..utils import largest_divisor
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


def reduction_unroll(extent: int) -> int:
    """Reduction steps one loop iteration of a register tile takes, unrolled: 4 (or the largest
    divisor of `extent` under it) on targets with 16 vector registers, else 1. An AVX2 tile's
    step is 8-12 FMAs beside its loads and the loop's own instructions, near the core's issue
    width: with 4 steps unrolled, ResNet-18's stride-2 3x3 convs ran 6-12% faster and the
    1024^3 matmul 6-13% (one and two threads, an Intel core with AVX-512 hidden); AVX-512's
    tiles (24-28 FMAs a step) gained nothing (matmul: as fast or slower)."""
    return largest_divisor(extent, 4) if cpu_facts().vector_registers <= 16 else 1


def reduce_steps(s: Schedule, acc: Tensor, k: IterVar, most: int | None = None) -> list[IterVar]:
    """The reduction loop `k` of `acc` in steps of `reduction_unroll` iterations (or of the
    largest divisor of its extent up to `most`), a step's iterations unrolled: [steps,
    iterations], or [k] where a step takes one."""
    extent = int(k.dom.extent.value)
    factor = reduction_unroll(extent) if most is None else largest_divisor(extent, most)
    if factor == 1:
        return [k]
    step, lane = s[acc].split(k, factor=factor)
    s[acc].unroll(lane)
    return [step, lane]


def register_tile(s: Schedule, acc: Tensor) -> None:
    """Reductions outermost (the innermost in `reduce_steps`), then the data axes: the last
    vectorized, the others unrolled."""
    *rows, cols = s[acc].op.axis
    *outer, k = s[acc].op.reduce_axis
    s[acc].reorder(*outer, *reduce_steps(s, acc, k), *rows, cols)
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
