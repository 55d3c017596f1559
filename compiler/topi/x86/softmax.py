"""x86 schedule of softmax."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from ..utils import as_outputs


def schedule_softmax(outs: Tensor | list[Tensor]) -> Schedule:
    """Parallel over all axes but the softmax axis; the maximum, the exponentials and their
    sum are computed per row inside that loop."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]
    axis = out.op.attrs["axis"]
    stages: dict[str, Tensor] = {}  # the softmax's stages by name (log-softmax reads max too)
    todo = list(out.op.input_tensors)
    while todo:
        t = todo.pop()
        if t.op.name.startswith("T_softmax_") and t.op.name not in stages:
            stages[t.op.name] = t
            todo += t.op.input_tensors
    exp, expsum = stages["T_softmax_exp"], stages["T_softmax_expsum"]
    max_elem = stages["T_softmax_maxelem"]
    axes = s[out].op.axis
    outer = [a for k, a in enumerate(axes) if k != axis]
    if not outer:
        return s
    s[out].reorder(*outer, axes[axis])
    row = s[out].fuse(*outer)
    s[out].parallel(row)
    for t in (expsum, exp, max_elem):  # consumers first: compute_at checks the uses
        s[t].compute_at(s[out], row)
    return s
