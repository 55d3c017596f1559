"""x86 schedule of depthwise conv2d (NCHW)."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from .. import tag
from ..utils import as_outputs, traverse_inline, vector_lanes, vector_width
from .utils import accumulator, schedule_pad


def schedule_depthwise_conv2d_nchw(outs: Tensor | list[Tensor]) -> Schedule:
    """Parallel over (batch, channel); each output row in vectors of a power of two dividing OW, the
    window taps accumulated in registers."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.DEPTHWISE_CONV2D_NCHW:
            return
        schedule_pad(s, op)
        acc = accumulator(s, op.output(0), out)
        n, c, y, x = s[out].op.axis
        xo, xi = s[out].split(x, factor=vector_width(out.shape[3], vector_lanes(out.dtype)))
        s[out].vectorize(xi)
        s[out].parallel(s[out].fuse(n, c))
        s[acc].compute_at(s[out], xo)
        *_, x = s[acc].op.axis
        s[acc].reorder(*s[acc].op.reduce_axis, x)
        s[acc].vectorize(x)

    traverse_inline(s, out.op, callback)
    return s
