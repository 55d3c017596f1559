"""Schedule of a layer normalization's group (nn.layer_norm with the injective nodes around it):
rows in parallel, each row's statistics computed inside the row's loop, vectorized along it."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from ..utils import as_outputs, traverse_inline, vector_lanes

STATISTICS = ("norm_inverse", "norm_squares", "norm_squares_part", "norm_sum", "norm_sum_part")


def schedule_normalize(outs: Tensor | list[Tensor]) -> Schedule:
    """The injective nodes inlined into the output, whose rows (all axes but the last, fused)
    run in parallel; where the output has the normalized input's shape, the row's statistics
    are computed in its iteration (their partial sums' lanes vectorized), else once before."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]
    stats: dict[str, Tensor] = {}

    def visit(op) -> None:
        if op.name in STATISTICS:
            stats[op.name] = op.output(0)

    traverse_inline(s, out.op, visit)
    *outer, last = s[out].op.axis
    lanes = vector_lanes(out.dtype)
    if out.shape[-1] % lanes == 0:
        s[out].vectorize(s[out].split(last, factor=lanes)[1])
    row = s[out].fuse(*outer) if outer else None
    if row is not None:
        s[out].parallel(row)
    inverse = stats.get("norm_inverse")
    per_row = row is not None and inverse is not None and inverse.shape == out.shape[:-1]
    for name in STATISTICS:
        t = stats.get(name)
        if t is None:
            continue
        if name.endswith("_part"):
            *_, p = s[t].op.axis
            s[t].reorder(*s[t].op.reduce_axis, p)
            s[t].vectorize(p)
        if per_row:
            s[t].compute_at(s[out], row)
    return s
