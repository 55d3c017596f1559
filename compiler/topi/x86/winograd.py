"""x86 schedule of conv2d_winograd_NCHWc (and the injective ops after it: bias, residual add,
relu, clip): the padded input once at root; each input tile's a x a transformed values with
the channels in vectors; the a^2 GEMMs in register tiles of output tiles x one channel block;
each output tile's m x m values with the channels in vectors, the epilogue fused."""

from __future__ import annotations

from ... import te
from ...codegen.target import cpu_facts
from ...schedule.schedule import Schedule
from ...te.tensor import ComputeOp, Tensor
from .. import tag
from ..utils import as_outputs, largest_divisor, traverse_inline, vector_lanes
from .injective import schedule_injective_from_existing


def schedule_conv2d_winograd_NCHWc(outs: Tensor | list[Tensor]) -> Schedule:
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag == tag.WINOGRAD_TRANSFORM:
            _transform(s, op)
        elif op.tag == tag.WINOGRAD_GEMM:
            _gemm(s, op)
        elif op.tag == tag.CONV2D_WINOGRAD:
            if op is not out.op:
                s[op].compute_inline()
            _inverse(s, out, int(op.input_tensors[0].shape[0]) - 2)

    traverse_inline(s, out.op, callback)
    return s


def _transform(s: Schedule, op) -> None:
    dpad = op.input_tensors[0]
    if isinstance(dpad.op, ComputeOp):  # padded once, in parallel: no condition in the transform
        s[dpad].compute_root()
        schedule_injective_from_existing(s, dpad)
    e, n, t, cb, c = s[op].op.axis
    co, ci = s[op].split(c, factor=vector_lanes(op.output(0).dtype))
    s[op].reorder(t, cb, co, e, n, ci)
    s[op].unroll(e)
    s[op].unroll(n)
    s[op].vectorize(ci)
    s[op].parallel(s[op].fuse(t, cb))


def _gemm(s: Schedule, op) -> None:
    acc = s.cache_write(op.output(0), "local")
    e, n, k, t, ob = s[op].op.axis
    vectors = max(1, int(ob.dom.extent.value) // vector_lanes(op.output(0).dtype))
    limit = (
        cpu_facts().vector_registers - 1
    ) // vectors - 1  # accumulators + weights + a broadcast
    to, ti = s[op].split(t, factor=largest_divisor(int(t.dom.extent.value), limit))
    s[op].vectorize(ob)
    s[op].parallel(s[op].fuse(e, n, k))
    s[acc].compute_at(s[op], to)
    e, n, k, t, ob = s[acc].op.axis
    cb, c = s[acc].op.reduce_axis
    s[acc].reorder(e, n, k, cb, c, t, ob)
    s[acc].unroll(t)
    s[acc].vectorize(ob)


def _inverse(s: Schedule, out: Tensor, m: int) -> None:
    b, k, y, x, ob = s[out].op.axis
    yo, yi = s[out].split(y, factor=m)
    xo, xi = s[out].split(x, factor=m)
    s[out].reorder(b, k, yo, xo, yi, xi, ob)
    s[out].unroll(yi)
    s[out].unroll(xi)
    s[out].vectorize(ob)
    s[out].parallel(s[out].fuse(b, k, yo))
