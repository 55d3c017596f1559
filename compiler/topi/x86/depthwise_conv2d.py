"""x86 schedules of depthwise conv2d (NCHW and NCHW[x]c)."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from .. import tag
from ..utils import as_outputs, traverse_inline, vector_lanes, vector_width
from .conv2d import tile_columns
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


def schedule_depthwise_conv2d_NCHWc(outs: Tensor | list[Tensor]) -> Schedule:
    """depthwise_conv2d_NCHWc (and injective followers: bias, relu, clip): parallel over
    (batch, channel block, output row); a register tile of output columns x the channel block
    accumulates the window taps (unrolled); the zero padding stays a condition on the loads (a
    padded copy at root costs more than the convolution: 0.38 vs 0.15 ms for 64 channels,
    112x112, stride 2)."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.DEPTHWISE_CONV2D_NCHWC:
            return
        acc = accumulator(s, op.output(0), out)
        n, c, y, x, cb = s[out].op.axis
        vectors = max(1, out.shape[4] // vector_lanes(out.dtype))
        xo, xi = s[out].split(x, factor=tile_columns(out.shape[3], vectors))
        s[out].vectorize(cb)
        s[out].parallel(s[out].fuse(n, c, y))
        s[acc].compute_at(s[out], xo)
        *_, x, cb = s[acc].op.axis
        ry, rx = s[acc].op.reduce_axis
        s[acc].reorder(ry, rx, x, cb)
        s[acc].unroll(rx)
        s[acc].unroll(x)
        s[acc].vectorize(cb)

    traverse_inline(s, out.op, callback)
    return s
