"""Schedule of nn.attention: blocks of query rows in parallel, each block's scores, maxima,
exponentials, sums and context computed inside the block's loop, so a block of rows of the
score matrix is all that is stored; the two products in register tiles whose key (or value)
vectors serve every row of the block."""

from __future__ import annotations

from ... import te
from ...codegen.target import cpu_facts
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from ..utils import as_outputs, largest_divisor, vector_width
from .injective import schedule_injective_from_existing
from .utils import reduce_steps

_TILE_VECTORS = 2  # vectors of a register tile's row: keys (or values) loaded per step


def _stages(out: Tensor) -> dict[str, Tensor]:
    """The attention's tensors by name, the output (`T_attention`) among them."""
    found: dict[str, Tensor] = {}
    todo = [out]
    while todo:
        t = todo.pop()
        if t.op.name.startswith("T_attention") and t.op.name not in found:
            found[t.op.name] = t
            todo += t.op.input_tensors
        elif t.op.name not in found and getattr(t.op, "tag", None) is not None:
            todo += t.op.input_tensors  # an injective follower fused after the attention
    return found


def _register_tile(s: Schedule, t: Tensor, width: int) -> None:
    """`t`'s rows x last axis computed in tiles of the block's rows x `width` columns in a
    local buffer (registers), its reduction outside the rows, the columns vectorized."""
    acc = s.cache_write(t, "local")
    *lead, rows, cols = s[t].op.axis
    outer, inner = s[t].split(cols, factor=width)
    s[t].reorder(*lead, outer, rows, inner)
    s[t].vectorize(inner)
    s[acc].compute_at(s[t], outer)
    *_, arow, acol = s[acc].op.axis
    (k,) = s[acc].op.reduce_axis
    s[acc].reorder(*reduce_steps(s, acc, k), arow, acol)
    s[acc].unroll(arow)
    s[acc].vectorize(acol)


def schedule_attention(outs: Tensor | list[Tensor]) -> Schedule:
    """Parallel over blocks of query rows (the batch and head axes fused with them): as many
    rows as leave registers for `_TILE_VECTORS` accumulators each beside the loaded vectors and
    a broadcast (a divisor of the query axis: 4 on AVX2, 8 on AVX-512)."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    stages = _stages(outs[0])
    att = stages.pop("T_attention")
    if att.op is not outs[0].op:
        schedule_injective_from_existing(s, outs[0])
    facts = cpu_facts()
    lanes = facts.lanes(att.dtype)
    *batch, tq, dv = s[att].op.axis
    room = (facts.vector_registers - _TILE_VECTORS - 2) // _TILE_VECTORS  # rows of a tile
    block = largest_divisor(int(tq.dom.extent.value), room)
    qo, qi = s[att].split(tq, factor=block)
    s[att].reorder(*batch, qo, qi, dv)
    fused = s[att].fuse(*batch, qo)
    s[att].parallel(fused)
    s[att].vectorize(dv)
    for name in ("context", "inverse", "sum", "sum_part", "exp", "max", "max_part", "scores"):
        t = stages[f"T_attention_{name}"]
        if name in ("scores", "context"):
            n = int(t.shape[-1])
            _register_tile(s, t, vector_width(n, _TILE_VECTORS * lanes))
        elif t.ndim == att.ndim:  # exponentials and partial maxima and sums: rows of vectors
            *_, last = s[t].op.axis
            s[t].reorder(*s[t].op.reduce_axis, last)
            s[t].vectorize(last)
        s[t].compute_at(s[att], fused)
    return s
