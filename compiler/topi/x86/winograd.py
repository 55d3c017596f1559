"""x86 schedule of conv2d_winograd_NCHWc (and the injective ops after it: bias, residual add,
relu, clip): the padded input once at root; each input tile's a x a transformed values with
the channels in vectors; the a^2 GEMMs in register tiles of tiles x one channel block; each
output tile's m x m values with the channels in vectors, the epilogue fused.

The transformed tiles V and products M hold a^2 = 16 times the input's and output's values.
Where the filter is small next to them (early layers: many tiles, few channels), the stages run
per block of tile rows, in parallel over the blocks, so a block's V and M stay in the core's L2
while every block reads the whole transformed filter; else each stage runs whole, in parallel
on its own."""

from __future__ import annotations

from ... import te
from ...codegen import parallel
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
    found = {}

    def callback(op):
        if op.tag == tag.CONV2D_WINOGRAD and op is not out.op:
            s[op].compute_inline()
        found[op.tag] = op

    traverse_inline(s, out.op, callback)
    v, mm = found[tag.WINOGRAD_TRANSFORM], found[tag.WINOGRAD_GEMM]
    dpad = v.input_tensors[0]
    if isinstance(dpad.op, ComputeOp):  # padded once, in parallel: no condition in the transform
        s[dpad].compute_root()
        schedule_injective_from_existing(s, dpad)
    block = _output(s, out, v, mm)
    _gemm(s, mm, out, block)  # first: V is then read inside the block
    _transform(s, v, out, block)
    return s


def block_rows(
    tile_rows: int, row_bytes: int, u_bytes: int, threads: int, l2_bytes: int
) -> int | None:
    """Tile rows per block (None: no blocks), given the bytes of V and M per tile row and of
    the transformed filter: the most rows whose V and M fit in half the L2, leaving at least
    two blocks per thread, when the blocks reading the filter again cost less than V and M
    going through memory, each written there and read back (64 channels at 56x56 on a 512 KB
    L2: blocks of one tile row read 7.3 MB of filter against 12.8 MB of V and M traffic, and
    ran 24% faster in one thread)."""
    if tile_rows * row_bytes <= l2_bytes // 2:
        return None  # all of V and M fits anyway
    for rows in range(tile_rows, 0, -1):
        blocks = tile_rows // rows
        if tile_rows % rows or rows * row_bytes > l2_bytes // 2 or blocks < 2 * threads:
            continue
        return rows if blocks * u_bytes < 2 * tile_rows * row_bytes else None
    return None


def gemm_tiles(tiles: int, limit: int, vectors: int) -> int:
    """Tiles per register tile of a GEMM (each tile `vectors` accumulator vectors, at most
    `limit` tiles): the largest divisor of `tiles` that fits, unless its register tile does
    under 3/4 of the FMAs per load (one weight vector or broadcast) of a full one; then `limit`,
    the last register tile partial. 49 tiles (a 14x14 output) on AVX2's 6 x 2 vectors: 6, not
    the divisor 1 (2 FMAs per 3 loads); on AVX-512's 14 x 2 the divisor 7 (14 per 9) stays."""

    def fmas_per_load(t: int) -> float:
        return t * vectors / (t + vectors)

    best = largest_divisor(tiles, limit)
    return best if fmas_per_load(best) >= 0.75 * fmas_per_load(limit) else min(tiles, limit)


def _output(s: Schedule, out: Tensor, v, mm):
    """The output's loops: (blocks of tile rows,) channel blocks, tiles, the m x m positions
    (unrolled) and the channel vector; returns the block loop (None: no blocks)."""
    v_shape = tuple(int(d) for d in v.output(0).shape)
    m_shape = tuple(int(d) for d in mm.output(0).shape)
    u = mm.input_tensors[1]
    m = v_shape[0] - 2
    b, k, y, x, ob = s[out].op.axis
    yo, yi = s[out].split(y, factor=m)
    xo, xi = s[out].split(x, factor=m)
    a, _, tiles, cb, ic_bn = v_shape
    tile_rows = -(-int(y.dom.extent.value) // m)
    row_bytes = 4 * a * a * tiles // tile_rows * (cb * ic_bn + m_shape[2] * m_shape[4])
    u_bytes = 4 * a * a * m_shape[2] * m_shape[4] * int(u.shape[3])
    threads = parallel.get_num_threads()
    rows = block_rows(tile_rows, row_bytes, u_bytes, threads, cpu_facts().l2_bytes)
    s[out].unroll(yi)
    s[out].unroll(xi)
    s[out].vectorize(ob)
    if rows is None:
        s[out].reorder(b, k, yo, xo, yi, xi, ob)
        s[out].parallel(s[out].fuse(b, k, yo))
        return None
    yb, yo = s[out].split(yo, factor=rows)
    s[out].reorder(b, yb, k, yo, xo, yi, xi, ob)
    block = s[out].fuse(b, yb)
    s[out].parallel(block)
    return block


def _transform(s: Schedule, op, out: Tensor, block) -> None:
    e, n, t, cb, c = s[op].op.axis
    co, ci = s[op].split(c, factor=vector_lanes(op.output(0).dtype))
    s[op].reorder(t, cb, co, e, n, ci)
    s[op].unroll(e)
    s[op].unroll(n)
    s[op].vectorize(ci)
    if block is None:
        s[op].parallel(s[op].fuse(t, cb))
    else:
        s[op].compute_at(s[out], block)


def _gemm(s: Schedule, op, out: Tensor, block) -> None:
    acc = s.cache_write(op.output(0), "local")
    e, n, k, t, ob = s[op].op.axis
    vectors = max(1, int(ob.dom.extent.value) // vector_lanes(op.output(0).dtype))
    limit = (
        cpu_facts().vector_registers - 1
    ) // vectors - 1  # accumulators + weights + a broadcast
    if block is None:
        to, ti = s[op].split(t, factor=gemm_tiles(int(t.dom.extent.value), limit, vectors))
        s[op].parallel(s[op].fuse(e, n, k))
    else:
        s[op].compute_at(s[out], block)
        to, ti = s[op].split(t, factor=limit)
    s[op].vectorize(ob)
    s[acc].compute_at(s[op], to)
    e, n, k, t, ob = s[acc].op.axis
    cb, c = s[acc].op.reduce_axis
    s[acc].reorder(e, n, k, cb, c, t, ob)
    s[acc].unroll(t)
    s[acc].vectorize(ob)
