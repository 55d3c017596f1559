"""Schedule of nn.attention: one query row at a time (rows in parallel), its scores, maximum,
exponentials, sum and context computed inside the row's loop, so a row of the score matrix is
all that is stored; the rows' axes vectorized."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from ..utils import as_outputs


def schedule_attention(outs: Tensor | list[Tensor]) -> Schedule:
    """Parallel over the query rows (the batch and head axes fused with them)."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]
    depth: dict[str, int] = {}  # each stage's longest path from the output
    stages: dict[str, Tensor] = {}
    todo = [(t, 1) for t in out.op.input_tensors]
    while todo:
        t, d = todo.pop()
        if t.op.name.startswith("T_attention_") and depth.get(t.op.name, 0) < d:
            depth[t.op.name], stages[t.op.name] = d, t
            todo += [(u, d + 1) for u in t.op.input_tensors]
    *rows, col = s[out].op.axis
    row = s[out].fuse(*rows)
    s[out].parallel(row)
    s[out].vectorize(col)
    for name in sorted(stages, key=depth.get):  # consumers first: compute_at checks the uses
        t = stages[name]
        s[t].compute_at(s[out], row)
        if t.ndim < out.ndim:
            continue  # a row's maximum or sum
        *_, last = s[t].op.axis
        s[t].reorder(*s[t].op.reduce_axis, last)  # a reduction outside, the row's axis inside
        s[t].vectorize(last)
    return s
