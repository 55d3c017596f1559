"""Pieces shared by the x86 schedules of reductions."""

from __future__ import annotations

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
        schedule_injective_from_existing(s, data)
