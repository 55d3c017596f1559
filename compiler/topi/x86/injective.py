"""Injective ops (elementwise, broadcast, pad, ...): parallel outer loops, vectorized last axis."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from ..utils import as_outputs, traverse_inline, vector_lanes


def schedule_injective_from_existing(s: Schedule, out: Tensor) -> Schedule:
    """Schedule `out` in place: fuse and parallelize all axes but the last, which is split by
    the vector width and vectorized when that width divides it (else left to LLVM); a 0-d
    output (one value) is left as it is."""
    if not s[out].op.axis:
        return s
    *outer, last = s[out].op.axis
    lanes = vector_lanes(out.dtype)
    if out.shape[-1] % lanes == 0:
        lo, li = s[out].split(last, factor=lanes)
        s[out].vectorize(li)
        if not outer:
            s[out].parallel(lo)
    if outer:
        s[out].parallel(s[out].fuse(*outer))
    return s


def schedule_injective(outs: Tensor | list[Tensor]) -> Schedule:
    """A schedule for injective outputs; injective producers are inlined into them."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    for out in outs:
        traverse_inline(s, out.op, lambda op: None)
        schedule_injective_from_existing(s, out)
    return s
