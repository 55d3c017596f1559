"""x86 schedule of pooling (windowed and global)."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from .. import tag
from ..utils import as_outputs, traverse_inline


def schedule_pool(outs: Tensor | list[Tensor]) -> Schedule:
    """pool2d / global_pool: parallel over (batch, channel); padding and the average's
    division are inlined, the window reduction is computed per (batch, channel) plane."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]
    n, c, *_ = s[out].op.axis
    plane = s[out].fuse(n, c)
    s[out].parallel(plane)

    def callback(op):
        if op.tag == tag.POOL and op is not out.op:
            s[op].compute_at(s[out], plane)

    traverse_inline(s, out.op, callback)
    return s
