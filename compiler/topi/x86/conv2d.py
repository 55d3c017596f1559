"""x86 schedules of conv2d: NCHWc (the fast layout) and plain NCHW."""

from __future__ import annotations

from ... import te
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from .. import tag
from ..utils import (
    as_outputs,
    largest_divisor,
    traverse_inline,
    vector_lanes,
    vector_width,
)
from .utils import accumulator, schedule_pad

MAX_REG_N = 14  # output columns per register tile: 14 x (oc_bn / 16) zmm accumulators


def schedule_conv2d_NCHWc(outs: Tensor | list[Tensor], reg_n: int | None = None) -> Schedule:
    """conv2d_NCHWc (and injective ops after it of the same shape, e.g. bias, relu): a register
    tile of reg_n output columns x oc_bn channels accumulates over all input channels and taps;
    parallel over (batch, channel block, output row)."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.CONV2D_NCHWC:
            return
        schedule_pad(s, op)
        acc = accumulator(s, op.output(0), out)
        n, oc, oh, ow, ob = s[out].op.axis
        owo, owi = s[out].split(ow, factor=reg_n or largest_divisor(out.shape[3], MAX_REG_N))
        s[out].vectorize(ob)
        s[out].parallel(s[out].fuse(n, oc, oh))
        s[acc].compute_at(s[out], owo)
        n, oc, oh, ow, ob = s[acc].op.axis
        icc, ry, rx, icb = s[acc].op.reduce_axis
        s[acc].reorder(n, oc, oh, icc, ry, rx, icb, ow, ob)
        s[acc].unroll(ow)
        s[acc].vectorize(ob)

    traverse_inline(s, out.op, callback)
    return s


def schedule_conv2d_nchw(outs: Tensor | list[Tensor]) -> Schedule:
    """conv2d_nchw: register tiles of up to 8 output channels x one vector of output columns
    (a power of two dividing OW, so no tail); reads of the input are contiguous for stride 1."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.CONV2D_NCHW:
            return
        schedule_pad(s, op)
        acc = accumulator(s, op.output(0), out)
        _, oc, _, ow = out.shape
        n, f, y, x = s[out].op.axis
        fo, fi = s[out].split(f, factor=largest_divisor(oc, 8))
        xo, xi = s[out].split(x, factor=vector_width(ow, vector_lanes(out.dtype)))
        s[out].reorder(n, fo, y, xo, fi, xi)
        s[out].vectorize(xi)
        s[out].parallel(s[out].fuse(n, fo, y))
        s[acc].compute_at(s[out], xo)
        n, f, y, x = s[acc].op.axis
        rc, ry, rx = s[acc].op.reduce_axis
        s[acc].reorder(n, y, rc, ry, rx, f, x)
        s[acc].unroll(f)
        s[acc].vectorize(x)

    traverse_inline(s, out.op, callback)
    return s
