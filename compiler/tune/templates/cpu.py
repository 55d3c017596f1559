"""CPU (target "llvm") templates on topi's fast x86 computes, as AutoTVM's dense_pack and
conv2d_NCHWc templates: each returns (schedule, args) for compiler.build.

* `matmul`: topi.x86.matmul_pack (B packed [N/bn, K, bn]; given packed when bn is fixed, as
  a network's dense layer holds its weight); knobs: the register tile rows (tile_y) and
  columns = bn (tile_x), the K split and its unrolling, the order of the panel and row-tile
  loops, parallel or not (`x86.schedule_dense_pack_knobs`).
* `conv2d_NCHWc`: topi.nn.conv2d_NCHWc on packed data [1, C/ic_bn, H, W, ic_bn] and kernel
  [F/oc_bn, C/ic_bn, KH, KW, ic_bn, oc_bn]; knobs: the channel blocks ic_bn (tile_ic) and oc_bn
  (tile_oc), the register tile's output rows (tile_oh: 1-4, the last row tile partial where
  they do not divide, so a 7-row output can take tiles of 2 rows as the default schedule does)
  and columns (tile_ow), unrolling the kernel width, the parallel loop (channel blocks and/or
  row bands: fine tasks, or coarse ones that keep a weight block or an input band in one
  core's cache) and where the zero padding is made (a condition in the kernel, a padded copy
  at root, or per task).
* `conv2d_1x1_NCHWc`: topi.nn.conv2d_1x1_NCHWc (a pointwise conv in partial sums over
  chunks of input channels) in the same layouts; knobs: the channel blocks and the register
  tile's positions (tile_p).
* `attention`: topi.nn.attention, the fused kernel (scores, masked softmax and context in one
  loop over blocks of query rows); knobs: the block's query rows (tile_q), the vectors of a
  register tile's row in the scores and in the context product, the reductions' unrolled
  steps, and what runs in parallel (`x86.schedule_attention_knobs`).

The spaces hold the fast hand-written schedules (scripts/bench_cpu.py) and poor ones (half
vectors, register tiles that spill, scalar reductions), so the search has something to learn.
"""

from __future__ import annotations

import numpy as np

from ... import te
from ...errors import TuningError
from ...topi import nn, testing, x86
from ..task import register_reference, register_template

VECTOR_BLOCKS = (8, 16, 32, 64)  # float32 lanes per block: half, one, two or four zmm


@register_template("matmul", "llvm", extents=("n", "m", "k"))
def matmul(cfg, n: int, m: int, k: int, bn: int = 0):
    """C[n, m] = A[n, k] @ B[k, m] (float32), B read through its packed copy; with the panel
    width `bn` given (a network's dense layer: `passes.cpu_layout` packed its weight once),
    B arrives packed as [m / bn, k, bn]. The rows' tile need not divide n (the last one
    partial: the default schedule's 6 rows on AVX2)."""
    cfg.define_split("tile_y", n, num_outputs=2, policy="any", max_factor=16)
    cfg.define_split(
        "tile_x",
        m,
        num_outputs=2,
        filter=lambda e: e.size[1] == bn if bn else e.size[1] in VECTOR_BLOCKS,
    )
    cfg.define_split("tile_k", k, num_outputs=2, max_factor=16)
    cfg.define_knob("unroll_k", [False, True])
    cfg.define_reorder("order", 2)  # (panels, row tiles): a panel of B stays in L2 when outer
    cfg.define_annotate("ann_outer", 1, "try_parallel")
    cfg.add_flop(2 * n * m * k)
    width = cfg["tile_x"].size[1]

    a = te.placeholder((n, k), "float32", "A")
    if bn:
        b = te.placeholder((m // bn, k, bn), "float32", "B_packed")
        c = x86.matmul_packed(a, b, m, streams=1)
    else:
        b = te.placeholder((k, m), "float32", "B")
        c = x86.matmul_pack(a, b, bn=width)
    s = x86.schedule_dense_pack_knobs(
        c,
        cfg["tile_y"].size[1],
        cfg["tile_k"].size[1],
        cfg["unroll_k"].val,
        cfg["order"].perm,
        cfg["ann_outer"].anns[0] == "parallel",
    )
    return s, [a, b, c]


@register_reference("matmul")
def matmul_reference(inputs, n, m, k, bn=0):
    a, b = inputs
    if bn:  # packed [m / bn, k, bn] -> [k, m]
        b = b.transpose(1, 0, 2).reshape(k, m)
    return [a @ b]


@register_template("matmul_basic", "llvm", extents=("n", "m", "k"))
def matmul_basic(cfg, n: int, m: int, k: int):
    """C[n, m] = A[n, k] @ B[k, m] (float32) on unpacked B, as AutoTVM's basic matmul template.

    Knobs: tile sizes from all factors of n, m, k; any order of the six split loops;
    vectorizing j.inner (only when it is innermost); parallel on the outermost loop (only when
    it is spatial). Most points are poor (reduction or i innermost: strided B, no vectors),
    a few are fast, so a model has much to gain over random search.
    """
    cfg.define_split("tile_y", n, num_outputs=2)
    cfg.define_split("tile_x", m, num_outputs=2)
    cfg.define_split("tile_k", k, num_outputs=2)
    cfg.define_reorder("order", 6)  # permutes (yo, xo, ko, yi, ki, xi)
    cfg.define_knob("vec", [False, True])
    cfg.define_annotate("ann_outer", 1, "try_parallel")
    cfg.add_flop(2 * n * m * k)

    a = te.placeholder((n, k), "float32", "A")
    b = te.placeholder((k, m), "float32", "B")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), "C")
    s = te.create_schedule(c.op)
    y, x = s[c].op.axis
    yo, yi = s[c].split(y, factor=cfg["tile_y"].size[1])
    xo, xi = s[c].split(x, factor=cfg["tile_x"].size[1])
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=cfg["tile_k"].size[1])
    loops = [yo, xo, ko, yi, ki, xi]
    order = [loops[p] for p in cfg["order"].perm]
    s[c].reorder(*order)
    if cfg["vec"].val and order[-1] is xi:
        s[c].vectorize(xi)
    if cfg["ann_outer"].anns[0] == "parallel" and order[0] in (yo, xo):
        s[c].parallel(order[0])
    return s, [a, b, c]


register_reference("matmul_basic")(matmul_reference)


def _channel_blocks(cfg, c: int, f: int, ic_bn: int, oc_bn: int) -> None:
    """The knobs of a conv's channel blocks: tile_ic (ic_bn when given) and tile_oc (oc_bn
    when given, else whole vectors)."""
    cfg.define_split(
        "tile_ic",
        c,
        num_outputs=2,
        max_factor=64,
        filter=lambda e: e.size[1] == (ic_bn or e.size[1]),
    )
    cfg.define_split(
        "tile_oc",
        f,
        num_outputs=2,
        filter=lambda e: e.size[1] == oc_bn if oc_bn else e.size[1] in VECTOR_BLOCKS,
    )


@register_template("conv2d_NCHWc", "llvm", extents=("c", "h", "w", "f", "kh", "kw", "stride"))
def conv2d_NCHWc(
    cfg,
    c: int,
    h: int,
    w: int,
    f: int,
    kh: int,
    kw: int,
    stride: int = 1,
    ic_bn: int = 0,
    oc_bn: int = 0,
    padding: int | None = None,
):
    """Batch-1 float32 conv2d with zero padding `padding` on every side (kh // 2 when None) in
    the NCHWc layouts of the channel blocks (fixed to ic_bn / oc_bn when given: a network's
    layout decides them)."""
    pad = kh // 2 if padding is None else padding
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (w + 2 * pad - kw) // stride + 1
    _channel_blocks(cfg, c, f, ic_bn, oc_bn)
    cfg.define_split("tile_ow", ow, num_outputs=2, max_factor=32)
    cfg.define_split("tile_oh", oh, num_outputs=2, policy="any", max_factor=4)
    cfg.define_knob("unroll_kw", [True, False])
    cfg.define_knob("parallel", list(x86.PARALLEL))
    cfg.define_knob("pad", ["inline", "root", "task"] if pad else ["none"])
    ic_bn, oc_bn = cfg["tile_ic"].size[1], cfg["tile_oc"].size[1]

    data = te.placeholder((1, c // ic_bn, h, w, ic_bn), "float32", "data")
    kernel = te.placeholder((f // oc_bn, c // ic_bn, kh, kw, ic_bn, oc_bn), "float32", "kernel")
    out = nn.conv2d_NCHWc(data, kernel, stride, pad)
    cfg.add_flop(2 * int(np.prod(out.shape)) * c * kh * kw)
    s = x86.schedule_conv2d_NCHWc_knobs(
        out,
        cfg["tile_oh"].size[1],
        cfg["tile_ow"].size[1],
        cfg["unroll_kw"].val,
        cfg["parallel"].val,
        cfg["pad"].val,
    )
    return s, [data, kernel, out]


@register_reference("conv2d_NCHWc")
def conv2d_NCHWc_reference(inputs, c, h, w, f, kh, kw, stride=1, ic_bn=0, oc_bn=0, padding=None):
    data, kernel = inputs  # the layouts carry the config's channel blocks
    weight = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(f, c, kh, kw)
    pad = kh // 2 if padding is None else padding
    out = testing.conv2d_nchw_python(
        testing.nchwc_unpack(data).astype(np.float64), weight.astype(np.float64), stride, pad
    )
    return [testing.nchw_pack(out, kernel.shape[-1]).astype(np.float32)]


@register_template("conv2d_1x1_NCHWc", "llvm", extents=("c", "h", "w", "f"))
def conv2d_1x1_NCHWc(cfg, c: int, h: int, w: int, f: int, ic_bn: int = 0, oc_bn: int = 0):
    """Batch-1 float32 pointwise conv2d (1x1, stride 1, unpadded) by partial sums over chunks
    of input-channel blocks (`x86.pointwise_chunk`) in the NCHWc layouts of the channel
    blocks (fixed when given); the register tile's positions (tile_p, the last tile partial)."""
    _channel_blocks(cfg, c, f, ic_bn, oc_bn)
    cfg.define_split("tile_p", h * w, num_outputs=2, policy="any", max_factor=16)
    ic_bn, oc_bn = cfg["tile_ic"].size[1], cfg["tile_oc"].size[1]

    data = te.placeholder((1, c // ic_bn, h, w, ic_bn), "float32", "data")
    kernel = te.placeholder((f // oc_bn, c // ic_bn, 1, 1, ic_bn, oc_bn), "float32", "kernel")
    out = nn.conv2d_1x1_NCHWc(data, kernel, x86.pointwise_chunk(c // ic_bn, ic_bn, oc_bn))
    cfg.add_flop(2 * h * w * c * f)
    return x86.schedule_conv2d_1x1_NCHWc(out, cfg["tile_p"].size[1]), [data, kernel, out]


@register_reference("conv2d_1x1_NCHWc")
def conv2d_1x1_NCHWc_reference(inputs, c, h, w, f, ic_bn=0, oc_bn=0):
    return conv2d_NCHWc_reference(inputs, c, h, w, f, 1, 1, 1, ic_bn, oc_bn, 0)


@register_template("attention", "llvm", extents=("heads", "tq", "tk", "d", "dv"))
def attention(cfg, heads: int, tq: int, tk: int, d: int, dv: int, masked: int = 1):
    """softmax(q k / sqrt(d) + mask) v (float32) for q [1, heads, tq, d], the keys transposed
    [1, heads, d, tk], v [1, heads, tk, dv] and, where `masked` is 1, an additive mask over
    the keys [1, 1, 1, tk] (an encoder's padding mask); 0: no mask."""
    if masked not in (0, 1):
        raise TuningError(f"attention: masked is 0 or 1, not {masked}")
    cfg.define_split("tile_q", tq, num_outputs=2, max_factor=16)
    cfg.define_knob("score_vectors", [1, 2, 4])
    cfg.define_knob("context_vectors", [1, 2, 4])
    cfg.define_knob("unroll", [1, 2, 4, 8])
    cfg.define_knob("parallel", list(x86.ATTENTION_PARALLEL))
    cfg.add_flop(2 * heads * tq * tk * (d + dv))

    q = te.placeholder((1, heads, tq, d), "float32", "q")
    k = te.placeholder((1, heads, d, tk), "float32", "k")
    v = te.placeholder((1, heads, tk, dv), "float32", "v")
    mask = [te.placeholder((1, 1, 1, tk), "float32", "mask")] if masked else []
    out = nn.attention(q, k, v, *(mask or [None]), float(1 / np.sqrt(d)))
    s = x86.schedule_attention_knobs(out, **attention_knobs(cfg))
    return s, [q, k, v, *mask, out]


def attention_knobs(cfg) -> dict:
    """An `attention` config's knobs as `x86.schedule_attention_knobs` takes them."""
    return {
        "rows": cfg["tile_q"].size[1],
        "score_vectors": cfg["score_vectors"].val,
        "context_vectors": cfg["context_vectors"].val,
        "unroll": cfg["unroll"].val,
        "parallel": cfg["parallel"].val,
    }


@register_reference("attention")
def attention_reference(inputs, heads, tq, tk, d, dv, masked=1):
    q, k, v, *mask = inputs
    return [testing.attention_python(q, k, v, mask[0] if mask else None, 1 / np.sqrt(d))]
