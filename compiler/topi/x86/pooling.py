"""x86 schedule of pooling (windowed and global), NCHW and NCHW[x]c."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from .. import tag
from ..utils import as_outputs, traverse_inline


def schedule_pool(outs: Tensor | list[Tensor]) -> Schedule:
    """pool2d / global_pool: parallel over (batch, channel) planes (NCHW) or (batch, channel
    block, output row) (NCHW[x]c, the channel block vectorized); padding and the average's
    division are inlined, the window reduction is computed inside the parallel loop."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]
    packed = out.ndim == 5
    axes = s[out].op.axis
    task = s[out].fuse(*axes[: 3 if packed else 2])
    s[out].parallel(task)
    if packed:
        s[out].vectorize(axes[4])

    def callback(op):
        if op.tag != tag.POOL:
            return
        if op is out.op:
            if packed:  # the reduction outside the vectorized channel block
                s[out].reorder(task, axes[3], *s[out].op.reduce_axis, axes[4])
            return
        s[op].compute_at(s[out], task)
        if packed:
            *outer, x, cb = s[op].op.axis
            s[op].reorder(*outer, x, *s[op].op.reduce_axis, cb)
            s[op].vectorize(cb)

    traverse_inline(s, out.op, callback)
    return s
