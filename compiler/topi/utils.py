"""Helpers shared by operators and schedules."""

from __future__ import annotations

from collections.abc import Callable

from ..codegen.target import cpu_facts
from ..schedule.schedule import Schedule
from ..te.tensor import ComputeOp, Operation, Tensor
from ..tir import dtype as dt
from . import tag


def traverse_inline(s: Schedule, final_op: Operation, callback: Callable[[ComputeOp], None]):
    """Inline every injective op feeding `final_op` (except outputs) and call `callback` on
    each compute op reached, producers first."""
    visited: set[int] = set()

    def visit(op: Operation) -> None:
        if id(op) in visited or not isinstance(op, ComputeOp):
            return
        visited.add(id(op))
        if tag.is_injective(op.tag) and op not in s.outputs:
            s[op].compute_inline()
        for t in op.input_tensors:
            visit(t.op)
        callback(op)

    visit(final_op)


def as_outputs(outs: Tensor | list[Tensor]) -> list[Tensor]:
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def vector_lanes(dtype: str, vector_bytes: int | None = None) -> int:
    """Elements of `dtype` in one vector register (default: the current target's width)."""
    return max(1, (vector_bytes or cpu_facts().vector_bytes) // dt.itemsize(dtype))


def vector_width(n: int, lanes: int) -> int:
    """The largest power of two <= lanes dividing n: LLVM splits such vectors into whole
    registers, while other widths (14, 48 lanes) come out as slow partial-register code."""
    width = 1
    while width * 2 <= lanes and n % (width * 2) == 0:
        width *= 2
    return width


def largest_divisor(n: int, limit: int) -> int:
    """The largest divisor of n that is <= limit."""
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)
