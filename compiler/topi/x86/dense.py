"""GEMM on x86: B packed to [N/bn, K, bn] so a register tile of tile_m rows x bn columns
(bn / lanes vectors per row) accumulates in registers over all of K, as TVM's dense_pack. The
default tile comes from the target's registers (`register_block`): 6 x 64 on AVX-512, 6 x 16
on AVX2; a layer whose columns it divides may take a wider tile of fewer rows (`gemm_panel`:
4 x 24 on AVX2). With fewer rows than the tile (a batch-1 dense layer, which streams its
weights from memory), the panel's K is split into `streams` parts read side by side, each with
its own accumulators, summed at the end."""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ... import te
from ...codegen.target import cpu_facts
from ...errors import OperatorError
from ...schedule.schedule import Schedule
from ...te.tensor import Tensor
from .. import tag
from ..nn.dense import add_bias
from ..utils import (
    as_outputs,
    largest_divisor,
    traverse_inline,
    vector_lanes,
    vector_width,
)
from .injective import schedule_injective_from_existing
from .utils import accumulator, register_block, register_tile

PACKED = "packed_weight"


def _pack(b: Tensor, bn: int, transpose_b: bool) -> Tensor:
    """B [K, N] (or [N, K] when transposed) as [ceil(N / bn), K, bn], zero past N."""
    k, n = b.shape[::-1] if transpose_b else b.shape

    def f(x, y, z):
        j = x * bn + z
        v = b[j, y] if transpose_b else b[y, j]
        return v if n % bn == 0 else te.if_then_else(j < n, v, te.const(0, b.dtype))

    return te.compute((-(-n // bn), k, bn), f, name="T_packed_B", tag=PACKED)


def matmul_pack(
    a: Tensor,
    b: Tensor,
    bias: Tensor | None = None,
    out_dtype: str | None = None,
    transpose_b: bool = False,
    bn: int | None = None,
    streams: int = 1,
) -> Tensor:
    """A [M, K] @ B (+ bias [N]) reading B through its packed copy; schedule with
    schedule_dense_pack. bn should be a power of two times the vector lanes (default: the
    target's register tile width); streams as matmul_packed's, one unless asked (the
    tuning template schedules the single reduction)."""
    out_dtype = out_dtype or a.dtype
    bn = bn or default_bn(out_dtype)
    ka = a.shape[1]
    kb, n = b.shape[::-1] if transpose_b else b.shape
    if ka != kb:
        raise OperatorError(f"matmul_pack: reduction extents differ: {ka} (A) and {kb} (B)")
    return matmul_packed(a, _pack(b, bn, transpose_b), n, bias, out_dtype, streams)


def matmul_packed(
    a: Tensor,
    packed: Tensor,
    n: int,
    bias: Tensor | None = None,
    out_dtype: str | None = None,
    streams: int | None = None,
) -> Tensor:
    """A [M, K] @ B (+ bias [N]) with B given packed as [ceil(N / bn), K, bn] (zero past N):
    a constant weight is packed once, ahead of time (`pack_weight`). The reduction runs as
    `streams` parts of K (default: `reduction_streams` of the shapes), each a sum of its own
    (tagged the packed GEMM, [M, streams, N]), then added up."""
    out_dtype = out_dtype or a.dtype
    m, ka = a.shape
    _, kb, bn = packed.shape
    if ka != kb:
        raise OperatorError(f"matmul_packed: reduction extents differ: {ka} (A) and {kb} (B)")
    streams = streams or reduction_streams(m, ka, bn, out_dtype)
    if streams < 1 or ka % streams:
        raise OperatorError(f"matmul_packed: {streams} streams do not split K = {ka} evenly")
    part = ka // streams
    k = te.reduce_axis(part, "k")
    width = packed.shape[0] * bn  # whole panels: a tail guard on the lanes would scalarize it

    def product(i, p, j):
        kk = p * part + k
        return a[i, kk].astype(out_dtype) * packed[j // bn, kk, j % bn].astype(out_dtype)

    if streams == 1:
        out = te.compute(
            (m, width),
            lambda i, j: te.sum(product(i, 0, j), axis=k),
            name="T_matmul_pack",
            tag=tag.DENSE_PACK,
        )
    else:
        parts = te.compute(
            (m, streams, width),
            lambda i, p, j: te.sum(product(i, p, j), axis=k),
            name="T_matmul_pack_parts",
            tag=tag.DENSE_PACK,
        )
        out = te.compute(
            (m, width),
            lambda i, j: functools.reduce(operator.add, (parts[i, p, j] for p in range(streams))),
            name="T_matmul_pack",
            tag=tag.INJECTIVE,
        )
    if n % bn:
        out = te.compute((m, n), lambda i, j: out[i, j], name="T_slice", tag=tag.INJECTIVE)
    return out if bias is None else add_bias(out, bias)


def pack_weight(weight: np.ndarray, bn: int | None = None) -> np.ndarray:
    """A dense layer's weight [N, K] as matmul_packed's [ceil(N / bn), K, bn], zero past N."""
    n, k = weight.shape
    bn = bn or default_bn(str(weight.dtype))
    panels = -(-n // bn)
    padded = np.zeros((panels * bn, k), weight.dtype)
    padded[:n] = weight
    return np.ascontiguousarray(padded.reshape(panels, bn, k).transpose(0, 2, 1))


def dense_pack(
    data: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    out_dtype: str | None = None,
    bn: int | None = None,
) -> Tensor:
    """data [batch, in] times weight [out, in] transposed (+ bias), weight packed."""
    return matmul_pack(data, weight, bias, out_dtype, transpose_b=True, bn=bn)


def default_bn(dtype: str = "float32") -> int:
    """The packed panel width of the target's register tile."""
    return register_block()[1] * vector_lanes(dtype)


MAX_ROW_VECTORS = 16
MAX_STREAMS = 4  # parts of K read side by side (DQN on AVX2: 2 were slower, 7 or 8 no faster)


def row_vectors(rows: int) -> int:
    """Accumulator vectors per output row of a GEMM with fewer rows than the register tile:
    as many as fit the registers beside a broadcast (weights are FMA memory operands), a
    power of two: 16 on AVX-512 (32 registers) and 8 on AVX2 (16) for one row."""
    regs = cpu_facts().vector_registers
    vectors = 1
    while 2 * vectors <= MAX_ROW_VECTORS and rows * 2 * vectors + 1 <= regs:
        vectors *= 2
    return vectors


def _split(k: int, most: int) -> int:
    """The most parts, at most `most` (halving from it), that split k evenly."""
    parts = max(1, min(most, MAX_STREAMS))
    while k % parts:
        parts //= 2
    return parts


def reduction_streams(rows: int, k: int, bn: int, dtype: str = "float32") -> int:
    """Parts of K a GEMM with `rows` rows reads side by side from each bn-wide panel: 1 when
    the rows fill the register tile (weights are reused from cache), else as many as the row's
    accumulators (`row_vectors`) hold panels' worth of vectors, at most MAX_STREAMS, splitting
    K evenly. A batch-1 dense layer uses each weight once: reading four places of the panel
    at once keeps more loads from memory in flight than one (AVX2, DQN's 3136 x 512 layer in
    16-wide panels x 4 streams against 64-wide x 1: the layer ~10% faster alone, up to 2x in
    the network where its weights come from L3 or memory, the whole network ~13% on one
    thread)."""
    if rows >= register_block()[0]:
        return 1
    panel_vectors = max(1, bn // vector_lanes(dtype))
    return _split(k, row_vectors(rows) // panel_vectors)


def tile_rows(bn: int, dtype: str = "float32") -> int:
    """Rows of the register tile over a bn-wide panel (bn / lanes vectors a row): the target's
    (`register_block`), fewer where their accumulators, a panel row and a broadcast would not
    fit the vector registers (a 3-vector AVX2 tile: 4 rows)."""
    vectors = max(1, bn // vector_lanes(dtype))
    regs = cpu_facts().vector_registers
    return max(1, min(register_block()[0], (regs - vectors - 1) // vectors))


def gemm_panel(n: int, dtype: str = "float32") -> int:
    """The panel width of a GEMM of n columns whose rows fill the register tile: the
    target's (`default_bn`), or 1.5 times as many vectors where those panels divide n and
    their tile (`tile_rows`) needs fewer loads per FMA (1 / rows + 1 / vectors): on AVX2,
    4 rows x 3 vectors (0.58 loads per FMA, 0.67 for 6 x 2; BERT-base's 768- and
    3072-wide layers); on AVX-512 6 x 4 stays (4 x 6 needs as many)."""
    lanes = vector_lanes(dtype)
    base = default_bn(dtype)
    wide = base // lanes * 3 // 2 * lanes

    def loads(bn: int) -> Fraction:
        return Fraction(1, tile_rows(bn, dtype)) + Fraction(lanes, bn)

    return wide if wide > base and n % wide == 0 and loads(wide) < loads(base) else base


def panel_width(rows: int, n: int, k: int, threads: int, dtype: str = "float32") -> int:
    """The packed panel width of a GEMM with `rows` output rows, n columns and a K-long
    reduction on `threads` threads: the register tile's (`gemm_panel`) when the rows fill it.
    With fewer rows (a batch-1 dense layer streams its weights from memory), the row's
    accumulators (`row_vectors`) shared among the K streams (`reduction_streams`): batch 1 on
    AVX-512, 4 streams x 4 vectors (64 floats); on AVX2, 4 x 2 (16); halved while that leaves
    a thread without a panel."""
    lanes = vector_lanes(dtype)
    if rows >= register_block()[0]:
        return gemm_panel(n, dtype)
    budget = row_vectors(rows)
    vectors = max(1, budget // _split(k, budget))
    while vectors > 1 and -(-n // (vectors * lanes)) < threads:
        vectors //= 2
    return vectors * lanes


def schedule_dense_pack(outs: Tensor | list[Tensor], tile_m: int | None = None) -> Schedule:
    """Schedule for dense_pack / matmul_pack (and injective ops after them, e.g. bias, relu):
    tile_m x bn output tiles (tile_m: the rows of the register tile over the packed panel,
    `tile_rows`, at most the row count), accumulators in registers, K innermost, parallel
    tiles."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])

    def callback(op):
        if op.tag == tag.DENSE_PACK:
            _schedule_gemm(s, op.output(0), outs[0], tile_m)
        elif op.tag == PACKED:
            x, _, z = s[op].op.axis
            s[op].vectorize(z)
            s[op].parallel(x)

    traverse_inline(s, outs[0].op, callback)
    return s


def _schedule_gemm(s: Schedule, gemm: Tensor, out: Tensor, tile_m: int | None) -> None:
    bn = gemm.op.input_tensors[1].shape[2]  # the packed B: [N / bn, K, bn]
    tile_m = tile_m or min(tile_rows(bn, gemm.dtype), out.shape[0])
    if gemm.ndim == 3:  # [M, streams, N]: summed into the output, which the sum is inlined in
        s[gemm].set_scope("local")
        acc = gemm
    else:
        acc = accumulator(s, gemm, out)
    i, j = s[out].op.axis
    io, jo, ii, ji = s[out].tile(i, j, tile_m, bn)
    s[out].reorder(jo, io, ii, ji)  # a bn-wide panel of packed B stays in L2 across row tiles
    s[out].vectorize(ji)
    s[out].parallel(s[out].fuse(jo, io))
    s[acc].compute_at(s[out], s[out].leaf_iter_vars[0])
    register_tile(s, acc)


def schedule_dense_pack_knobs(
    outs: Tensor | list[Tensor],
    tile_y: int,
    tile_k: int,
    unroll_k: bool,
    order: Sequence[int],
    parallel: bool,
) -> Schedule:
    """schedule_dense_pack with the `matmul` template's knobs (a GEMM in one reduction, not
    in streams): tile_y x bn output tiles, their loops (panels, row tiles) permuted by `order`
    and fused, parallel when `parallel`; K split by tile_k outside the tile's rows (unrolled)
    and lanes (vectorized), its inner part unrolled when `unroll_k`."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag == tag.DENSE_PACK:
            gemm = op.output(0)
            if gemm.ndim != 2:
                raise OperatorError("schedule_dense_pack_knobs: the GEMM's K is in streams")
            acc = accumulator(s, gemm, out)
            bn = gemm.op.input_tensors[1].shape[2]
            io, jo, ii, ji = s[out].tile(*s[out].op.axis, tile_y, bn)
            outer = [(jo, io)[p] for p in order]
            s[out].reorder(*outer, ii, ji)
            s[out].vectorize(ji)
            tile = s[out].fuse(*outer)
            if parallel:
                s[out].parallel(tile)
            s[acc].compute_at(s[out], tile)
            ai, aj = s[acc].op.axis
            k = s[acc].op.reduce_axis[0]
            steps = s[acc].split(k, factor=tile_k) if tile_k > 1 else (k,)
            s[acc].reorder(*steps, ai, aj)
            if unroll_k and tile_k > 1:
                s[acc].unroll(steps[1])
            s[acc].unroll(ai)
            s[acc].vectorize(aj)
        elif op.tag == PACKED:
            x, _, z = s[op].op.axis
            s[op].vectorize(z)
            if parallel:
                s[op].parallel(x)

    traverse_inline(s, out.op, callback)
    return s


def schedule_dense(outs: Tensor | list[Tensor]) -> Schedule:
    """Schedule for nn.matmul / nn.dense (unpacked B) and matmuls with batch axes (attention's
    per-head products): register tiles of up to 4 rows x one vector of columns, batches and
    tiles in parallel; fast for B [K, N], gathers for dense's transposed weight. The output
    stage computes the tiles where it is the product with elementwise ops after it, else the
    product is a stage of its own and the output an injective one."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.MATMUL:
            return
        gemm = op.output(0)
        fused = tuple(out.shape) == tuple(gemm.shape)
        stage = out if fused else gemm
        acc = accumulator(s, gemm, out) if fused else s.cache_write(gemm, "local")
        m, n = gemm.shape[-2:]
        *batch, i, j = s[stage].op.axis
        io, jo, ii, ji = s[stage].tile(
            i, j, largest_divisor(m, 4), vector_width(n, vector_lanes(gemm.dtype))
        )
        s[stage].vectorize(ji)
        s[stage].parallel(s[stage].fuse(*batch, io, jo))
        s[acc].compute_at(s[stage], s[stage].leaf_iter_vars[0])
        register_tile(s, acc)
        if not fused:
            schedule_injective_from_existing(s, out)

    traverse_inline(s, out.op, callback)
    return s
