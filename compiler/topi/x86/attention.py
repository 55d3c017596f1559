"""Schedule of nn.attention: blocks of query rows in parallel, each block's scores, maxima,
exponentials, sums and context computed inside the block's loop, so a block of rows of the
score matrix is all that is stored; the two products in register tiles whose key (or value)
vectors serve every row of the block. `schedule_attention_knobs` takes what the default fixes
as knobs (the `attention` template's): the block's rows, each tile's vectors, the reductions'
unrolled steps and what runs in parallel."""

from __future__ import annotations

from ... import te
from ...codegen.target import cpu_facts
from ...errors import ScheduleError
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from ..utils import as_outputs, largest_divisor, vector_width
from .injective import schedule_injective_from_existing
from .utils import reduce_steps, reduction_unroll

_TILE_VECTORS = 2  # vectors of a register tile's row: keys (or values) loaded per step
# what runs in parallel: blocks of query rows (with the batch and head axes), whole heads (a
# head's blocks in turn), nothing
ATTENTION_PARALLEL = ("blocks", "heads", "none")


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


def _register_tile(s: Schedule, t: Tensor, width: int, unroll: int) -> None:
    """`t`'s rows x last axis computed in tiles of the block's rows x `width` columns in a
    local buffer (registers), its reduction outside the rows in steps of up to `unroll`
    iterations (unrolled), the columns vectorized."""
    acc = s.cache_write(t, "local")
    *lead, rows, cols = s[t].op.axis
    outer, inner = s[t].split(cols, factor=width)
    s[t].reorder(*lead, outer, rows, inner)
    s[t].vectorize(inner)
    s[acc].compute_at(s[t], outer)
    *_, arow, acol = s[acc].op.axis
    (k,) = s[acc].op.reduce_axis
    s[acc].reorder(*reduce_steps(s, acc, k, unroll), arow, acol)
    s[acc].unroll(arow)
    s[acc].vectorize(acol)


def default_attention_knobs(tq: int) -> dict:
    """The default schedule's knobs for `tq` query rows on the current target: as many rows
    as leave registers for `_TILE_VECTORS` accumulators each beside the loaded vectors and a
    broadcast (a divisor of tq: 4 on AVX2, 8 on AVX-512), `_TILE_VECTORS` per tile row, the
    target's unrolled reduction steps (`reduction_unroll`), blocks in parallel."""
    room = (cpu_facts().vector_registers - _TILE_VECTORS - 2) // _TILE_VECTORS
    return {
        "rows": largest_divisor(tq, room),
        "score_vectors": _TILE_VECTORS,
        "context_vectors": _TILE_VECTORS,
        "unroll": reduction_unroll(4),  # 4 where the target unrolls reductions, else 1
        "parallel": "blocks",
    }


def schedule_attention(outs: Tensor | list[Tensor]) -> Schedule:
    """The default schedule (`default_attention_knobs`)."""
    outs = as_outputs(outs)
    tq = int(_stages(outs[0])["T_attention"].shape[-2])
    return schedule_attention_knobs(outs, **default_attention_knobs(tq))


def schedule_attention_knobs(
    outs: Tensor | list[Tensor],
    rows: int,
    score_vectors: int,
    context_vectors: int,
    unroll: int,
    parallel: str,
) -> Schedule:
    """Blocks of `rows` query rows (a divisor of the query axis), each block's stages computed
    inside its loop: the scores' register tiles `score_vectors` vectors of keys wide, the
    context's `context_vectors` of values (a power of two dividing the axis, at most that
    many lanes), both reductions in steps of up to `unroll` iterations; in parallel the blocks
    with the batch and head axes fused (`blocks`), the batch and head axes alone (`heads`),
    or nothing (`none`)."""
    outs = as_outputs(outs)
    stages = _stages(outs[0])
    att = stages.pop("T_attention")
    tq = int(att.shape[-2])
    if rows < 1 or tq % rows:
        raise ScheduleError(f"schedule_attention: {rows} rows a block do not divide {tq}")
    if min(score_vectors, context_vectors, unroll) < 1:
        raise ScheduleError(
            f"schedule_attention: vectors ({score_vectors}, {context_vectors}) and unroll "
            f"({unroll}) must be positive"
        )
    if parallel not in ATTENTION_PARALLEL:
        raise ScheduleError(
            f"schedule_attention: parallel {parallel!r} is not one of {ATTENTION_PARALLEL}"
        )
    s = te.create_schedule([o.op for o in outs])
    if att.op is not outs[0].op:
        schedule_injective_from_existing(s, outs[0])
    lanes = cpu_facts().lanes(att.dtype)
    *batch, tq_axis, dv = s[att].op.axis
    qo, qi = s[att].split(tq_axis, factor=rows)
    s[att].reorder(*batch, qo, qi, dv)
    if parallel == "heads":
        at = qo
        if batch:
            s[att].parallel(s[att].fuse(*batch))
    else:
        at = s[att].fuse(*batch, qo)
        if parallel == "blocks":
            s[att].parallel(at)
    s[att].vectorize(dv)
    vectors = {"scores": score_vectors, "context": context_vectors}
    for name in ("context", "inverse", "sum", "sum_part", "exp", "max", "max_part", "scores"):
        t = stages[f"T_attention_{name}"]
        if name in vectors:
            n = int(t.shape[-1])
            _register_tile(s, t, vector_width(n, vectors[name] * lanes), unroll)
        elif t.ndim == att.ndim:  # exponentials and partial maxima and sums: rows of vectors
            *_, last = s[t].op.axis
            s[t].reorder(*s[t].op.reduce_axis, last)
            s[t].vectorize(last)
        s[t].compute_at(s[att], at)
    return s
