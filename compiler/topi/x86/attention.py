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
    stages: dict[str, Tensor] = {}
    todo = list(out.op.input_tensors)
    while todo:
        t = todo.pop()
        if t.op.name.startswith("T_attention_") and t.op.name not in stages:
            stages[t.op.name] = t
            todo += t.op.input_tensors
    *rows, col = s[out].op.axis
    row = s[out].fuse(*rows)
    s[out].parallel(row)
    s[out].vectorize(col)
    for name in ("context", "sum", "exp", "max", "scores"):  # consumers first
        s[stages[f"T_attention_{name}"]].compute_at(s[out], row)
    for name in ("scores", "context"):  # the reduction outside, the row's axis vectorized
        t = stages[f"T_attention_{name}"]
        *_, last = s[t].op.axis
        s[t].reorder(*s[t].op.reduce_axis, last)
        s[t].vectorize(last)
    s[stages["T_attention_exp"]].vectorize(s[stages["T_attention_exp"]].op.axis[-1])
    return s
