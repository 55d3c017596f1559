"""Row softmax on the GPU: blocks of rows, one thread per row reducing it (max, then the sum of
exponentials) into registers and writing it normalized; optionally the block's rows are first
staged in shared memory by all its threads with coalesced reads, so the three passes over a
row read shared memory instead of strided global memory."""

from __future__ import annotations

from ... import te
from ...te.tensor import Tensor


def schedule_softmax(
    out: Tensor, rows_per_block: int, stage_shared: bool = True, unroll: int = 1
) -> te.Schedule:
    """out: topi.nn.softmax of a 2-d tensor along its last axis; unroll: columns per step of
    the per-row loops (1: no unrolling)."""
    s = te.create_schedule(out.op)
    exp = out.op.input_tensors[0]
    expsum = out.op.input_tensors[1]
    max_elem = next(t for t in exp.op.input_tensors if t.op in s.stage_map)
    x = next(t for t in exp.op.input_tensors if t.op not in s.stage_map)
    readers = [max_elem, exp]
    cache = s.cache_read(x, "shared", readers) if stage_shared else None
    s[exp].compute_inline()
    row, col = s[out].op.axis
    b, t = s[out].split(row, factor=rows_per_block)
    s[out].bind(b, te.thread_axis("blockIdx.x"))
    s[out].bind(t, te.thread_axis("threadIdx.x"))
    loops = [(out, col)]
    for red in (max_elem, expsum):
        s[red].set_scope("local")
        s[red].compute_at(s[out], t)
        loops.append((red, s[red].op.reduce_axis[0]))
    if unroll > 1:
        for tensor, loop in loops:
            _, inner = s[tensor].split(loop, factor=unroll)
            s[tensor].unroll(inner)
    if cache is not None:
        s[cache].compute_at(s[out], b)
        fused = s[cache].fuse(*s[cache].op.axis)
        _, tx = s[cache].split(fused, factor=rows_per_block)
        s[cache].bind(tx, te.thread_axis("threadIdx.x"))
    return s
