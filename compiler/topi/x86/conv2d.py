"""x86 schedules of conv2d: NCHWc (the fast layout) and plain NCHW."""

from __future__ import annotations

import math

from ... import te
from ...codegen import parallel as thread_pool
from ...codegen.target import cpu_facts
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
from .injective import schedule_injective_from_existing
from .utils import accumulator, reduce_steps, schedule_pad

MAX_COLUMNS = 16  # longer unrolled tiles gain little (loads per FMA ~ 1/columns + 1/vectors)


def tile_columns(ow: int, vectors: int) -> int:
    """Output columns of a register tile whose columns are `vectors` vectors each: a divisor of
    OW with the accumulators, the weight vectors and one broadcast in the target's registers
    (a divisor up to twice that many when the largest fitting one is under half of it, so OW 7
    takes 7 columns, not 1)."""
    regs = cpu_facts().vector_registers
    limit = max(1, min(MAX_COLUMNS, (regs - vectors - 1) // vectors))
    best = largest_divisor(ow, limit)
    return best if 2 * best >= limit else largest_divisor(ow, 2 * limit)


def tile_rows(oh: int, cols: int, vectors: int) -> int:
    """Output rows of a register tile of `cols` columns x `vectors` vectors: as many as the
    target's registers hold beside the weight vectors and a broadcast; of the row counts
    giving the fewest row tiles, the smallest (OH 7 with room for 2 rows: tiles of 2, 2, 2,
    1)."""
    rows = max(1, min(oh, positions(vectors) // cols))
    tiles = -(-oh // rows)
    return -(-oh // tiles)


def positions(vectors: int) -> int:
    """Output positions a conv register tile of `vectors` vectors each can hold: the target's
    vector registers less the weight vectors and one broadcast, divided by `vectors` (14 for
    two vectors on AVX-512's 32 registers, 6 on AVX2's 16)."""
    return max(1, (cpu_facts().vector_registers - vectors - 1) // vectors)


def conv_tile(oh: int, ow: int, vectors: int) -> tuple[int, int]:
    """(rows, columns) of conv2d_NCHWc's register tile: every tile streams all the weights
    of its channel block, so the fewest tiles (columns a divisor of OW, at most `positions`
    and MAX_COLUMNS; rows by `tile_rows`), the widest of equals. 2 x 7 for a 7x7 output and
    1 x 14 for 14x14 on AVX-512 (two vectors); 3 x 2 for 14x14 on AVX2, where 7 columns of
    two vectors would spill an accumulator in every step of the reduction."""
    best: tuple[int, int, int] | None = None
    for cols in range(min(ow, positions(vectors), MAX_COLUMNS), 0, -1):
        if ow % cols:
            continue
        rows = tile_rows(oh, cols, vectors)
        tiles = -(-oh // rows) * (ow // cols)
        if best is None or tiles < best[0]:
            best = (tiles, rows, cols)
    assert best is not None  # cols = 1 always divides
    return best[1], best[2]


def channel_block(channels: int, dtype: str = "float32") -> int:
    """The default channel block of the NCHW[x]c layout: two vectors when they divide the
    channels, else one, else the largest divisor under one vector (3 for an RGB input)."""
    lanes = vector_lanes(dtype)
    for bn in (2 * lanes, lanes):
        if channels % bn == 0:
            return bn
    return largest_divisor(channels, lanes)


def schedule_conv2d_NCHWc(
    outs: Tensor | list[Tensor],
    reg_n: int | None = None,
    reg_rows: int | None = None,
    outside: bool | None = None,
) -> Schedule:
    """conv2d_NCHWc (and injective ops after it of the same shape, e.g. bias, residual add,
    relu, clip): a register tile of reg_rows output rows x reg_n columns (default
    `conv_tile`) x oc_bn channels accumulates over all input channels and taps; parallel
    over (batch, channel block, row tile). With `outside` (default `chunks_outside`), the
    input-channel blocks run outside the register tiles instead (`_chunks_outside`)."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.CONV2D_NCHWC:
            return
        schedule_pad(s, op)
        acc = accumulator(s, op.output(0), out)
        n, oc, oh, ow, ob = s[out].op.axis
        vectors = max(1, out.shape[4] // vector_lanes(out.dtype))
        rows, cols = conv_tile(out.shape[2], out.shape[3], vectors)
        if reg_n:
            cols, rows = reg_n, tile_rows(out.shape[2], reg_n, vectors)
        rows = reg_rows or rows
        chunks = outside
        if chunks is None:
            icc, _, kh, kw, icb, _ = (int(d) for d in op.input_tensors[1].shape)
            tiles = -(-int(out.shape[2]) // rows) * -(-int(out.shape[3]) // cols)
            weight_bytes = icc * icb * kh * kw * int(out.shape[4]) * 4
            chunks = chunks_outside(weight_bytes, tiles, cpu_facts().l2_bytes)
        if chunks:
            _chunks_outside(s, out, acc, rows, cols)
            return
        oho, ohi = s[out].split(oh, factor=rows)
        owo, owi = s[out].split(ow, factor=cols)
        s[out].reorder(n, oc, oho, owo, ohi, owi, ob)
        s[out].vectorize(ob)
        s[out].parallel(s[out].fuse(n, oc, oho))
        s[acc].compute_at(s[out], owo)
        n, oc, oh, ow, ob = s[acc].op.axis
        icc, ry, rx, icb = s[acc].op.reduce_axis
        s[acc].reorder(n, oc, icc, ry, rx, *reduce_steps(s, acc, icb), oh, ow, ob)
        s[acc].unroll(oh)
        s[acc].unroll(ow)
        s[acc].vectorize(ob)

    traverse_inline(s, out.op, callback)
    return s


def chunks_outside(weight_bytes: int, tiles: int, l2_bytes: int) -> bool:
    """Whether conv2d_NCHWc runs the input-channel blocks outside its register tiles: when
    a block of output channels' weights (`weight_bytes`) take over a quarter of the L2 and
    at least 8 register tiles would stream them. 7x7 outputs of 256 or 512 channels on AVX2
    (4 x 1 tiles, 14 per block; 11% faster in one thread), not on AVX-512 (2 x 7, 4 per
    block); 14x14 outputs of 128 channels stay (73 KB of weights: no gain)."""
    return weight_bytes > l2_bytes // 4 and tiles >= 8


def _chunks_outside(s: Schedule, out: Tensor, acc: Tensor, rows: int, cols: int) -> None:
    """The accumulators of a whole block of output channels (OH x OW x oc_bn, in memory);
    each input-channel block's weights (KH x KW x ic_bn x oc_bn, L1-sized) serve every
    register tile before the next block's; parallel over (batch, channel block)."""
    n, oc, oh, ow, ob = s[out].op.axis
    s[out].vectorize(ob)
    task = s[out].fuse(n, oc)
    s[out].parallel(task)
    s[acc].compute_at(s[out], task)
    n, oc, oh, ow, ob = s[acc].op.axis
    icc, ry, rx, icb = s[acc].op.reduce_axis
    oho, ohi = s[acc].split(oh, factor=rows)
    owo, owi = s[acc].split(ow, factor=cols)
    s[acc].reorder(n, oc, icc, oho, owo, ry, rx, *reduce_steps(s, acc, icb), ohi, owi, ob)
    s[acc].unroll(ohi)
    s[acc].unroll(owi)
    s[acc].vectorize(ob)


def pointwise_chunk(ic_blocks: int, ic_bn: int, oc_bn: int) -> int:
    """Input-channel blocks per partial sum of conv2d_1x1_NCHWc: the most (dividing
    ic_blocks) whose weights for one block of output channels take at most a quarter of the
    L1 data cache, so they stay there while the input streams past: 8 blocks of 16 channels
    on AVX2 (8 KB of 32 KB)."""
    per_block = ic_bn * oc_bn * 4
    return largest_divisor(ic_blocks, max(1, cpu_facts().l1d_bytes // 4 // per_block))


MAX_PARTIALS = 16  # partial sums the output adds up at most (ResNet-50's 2048 channels: 16)


def pointwise_pays(ic_blocks: int, chunk: int, positions: int, oc_bn: int) -> bool:
    """Whether a 1x1 conv runs by conv2d_1x1_NCHWc by default: its input channels take 2 to
    MAX_PARTIALS chunks (narrow channel blocks, as 131 channels in blocks of 1, make more),
    and a task's partial sums (chunks x positions x oc_bn floats) take at most 4x the L2
    (memory, not speed, bounds them: on AVX2, 1x1 layers of 256-1024 input channels ran
    8-19% faster so than with every input channel inside the register tiles, and ResNet-50's
    56x56 ones 10% to 2.7x faster with 0.4-0.8 MB of partial sums)."""
    partials = ic_blocks // chunk
    partial_bytes = partials * positions * oc_bn * 4
    return 1 < partials <= MAX_PARTIALS and partial_bytes <= 4 * cpu_facts().l2_bytes


def schedule_conv2d_1x1_NCHWc(outs: Tensor | list[Tensor], tile_p: int | None = None) -> Schedule:
    """conv2d_1x1_NCHWc and the injective ops after it: parallel over (batch, output-channel
    block); in a task, each chunk of input channels serves every register tile of tile_p
    positions (default `positions`) x oc_bn channels in turn, a tile's sums stored to the
    partials; the output adds the partials up (with the followers) a vector at a time."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.CONV2D_1X1:
            return
        partial = op.input_tensors[0]
        acc = s.cache_write(partial, "local")
        if op is not out.op:
            s[op].compute_inline()
        n, oc, _, _, ob = s[out].op.axis
        s[out].vectorize(ob)
        task = s[out].fuse(n, oc)
        s[out].parallel(task)
        s[partial].compute_at(s[out], task)
        vectors = max(1, out.shape[4] // vector_lanes(out.dtype))
        n, c, oc, p, ob = s[partial].op.axis
        po, pi = s[partial].split(p, factor=tile_p or positions(vectors))
        s[partial].reorder(n, c, oc, po, pi, ob)
        s[partial].vectorize(ob)
        s[acc].compute_at(s[partial], po)
        n, c, oc, p, ob = s[acc].op.axis
        s[acc].reorder(n, c, oc, *s[acc].op.reduce_axis, p, ob)
        s[acc].unroll(p)
        s[acc].vectorize(ob)

    traverse_inline(s, out.op, callback)
    return s


# the parallel loop of a tuned conv2d_NCHWc: the (fused) outer loops run as tasks
PARALLEL = {
    "oc_rows": ("oc", "rows"),  # fine tasks; neighbours share a weight block
    "rows_oc": ("rows", "oc"),  # fine tasks; neighbours share input rows
    "oc": ("oc",),  # a task owns a weight block and sweeps all rows
    "rows": ("rows",),  # a task owns a band of rows and sweeps all weights
}


def schedule_conv2d_NCHWc_knobs(
    outs: Tensor | list[Tensor],
    tile_oh: int,
    tile_ow: int,
    unroll_kw: bool,
    parallel: str,
    pad: str,
) -> Schedule:
    """conv2d_NCHWc (and injective followers) as the tuning template `conv2d_NCHWc` sets it:
    a register tile of tile_oh rows x tile_ow columns x oc_bn, the parallel loop of
    `PARALLEL[parallel]`, the zero padding made `pad` = "inline" (a condition in the kernel),
    "task" (per parallel task), "root" (once, in parallel) or "none"."""
    outs = as_outputs(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]

    def callback(op):
        if op.tag != tag.CONV2D_NCHWC:
            return
        acc = accumulator(s, op.output(0), out)
        batch, oc, y, x, ob = s[out].op.axis
        yo, yi = s[out].split(y, factor=tile_oh)
        xo, xi = s[out].split(x, factor=tile_ow)
        loops = {"oc": oc, "rows": yo}
        tasks = [loops[name] for name in PARALLEL[parallel]]
        inner = [lp for lp in (oc, yo) if lp not in tasks]
        extent = {oc: int(oc.dom.extent.value), yo: -(-int(y.dom.extent.value) // tile_oh)}
        if inner and math.prod(extent[lp] for lp in tasks) < thread_pool.get_num_threads():
            # fewer tasks than threads (a network's tuner measures one thread, where this knob
            # only orders the loops; "oc" of one channel block ran on one thread): the next
            # loop joins the parallel loop, in the same order
            tasks.append(inner.pop(0))
        s[out].reorder(batch, *tasks, *inner, xo, yi, xi, ob)
        s[out].vectorize(ob)
        task = s[out].fuse(batch, *tasks)
        s[out].parallel(task)
        s[acc].compute_at(s[out], xo)
        batch, oc, y, x, ob = s[acc].op.axis
        icc, ry, rx, icb = s[acc].op.reduce_axis
        s[acc].reorder(batch, oc, icc, ry, rx, *reduce_steps(s, acc, icb), y, x, ob)
        if unroll_kw:
            s[acc].unroll(rx)
        s[acc].unroll(y)
        s[acc].unroll(x)
        s[acc].vectorize(ob)
        padded = op.input_tensors[0]
        if pad != "none" and getattr(padded.op, "tag", None) == tag.INJECTIVE:
            if pad == "inline":  # zeros chosen by a condition in the kernel
                s[padded].compute_inline()
            elif pad == "task":  # each task pads the input rows it reads
                s[padded].compute_at(s[out], task)
                s[padded].vectorize(s[padded].op.axis[-1])
            else:  # padded once, in parallel, before the convolution
                s[padded].compute_root()
                schedule_injective_from_existing(s, padded)

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
