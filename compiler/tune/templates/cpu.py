"""CPU (target "llvm") templates: float32 matmul and NCHW conv2d with tiling, reorder and
vectorize/unroll/parallel knobs. Each returns (schedule, args) for compiler.build.

Both compute into a "local" accumulator (cache_write) attached at the output's tile loop, so the
tile sizes decide what stays in registers and caches, and the reorder knob decides which
operand is streamed.
"""

from __future__ import annotations

import numpy as np

from ... import te
from ..task import register_reference, register_template

# reduction position among the accumulator's loops [k.outer, k.inner, rows, cols]: a few
# permutations that keep the vectorizable columns innermost plus ones that do not
MATMUL_ORDERS = ((0, 1, 2, 3), (0, 2, 1, 3), (2, 0, 1, 3), (0, 1, 3, 2), (0, 3, 1, 2), (3, 2, 0, 1))


def _annotate(stage, axis, choice: str) -> None:
    if choice == "vec":
        stage.vectorize(axis)
    elif choice == "unroll":
        stage.unroll(axis)
    elif choice == "parallel":
        stage.parallel(axis)


@register_template("matmul", "llvm")
def matmul(cfg, n: int, m: int, k: int):
    """C[n, m] = A[n, k] @ B[k, m] (float32)."""
    a = te.placeholder((n, k), "float32", "A")
    b = te.placeholder((k, m), "float32", "B")
    rk = te.reduce_axis(k, "k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, rk] * b[rk, j], axis=rk), name="C")
    s = te.create_schedule(c.op)
    acc = s.cache_write(c, "local")

    cfg.define_split("tile_i", n, num_outputs=2, max_factor=32)
    cfg.define_split("tile_j", m, num_outputs=2, max_factor=64)
    cfg.define_split("tile_k", k, num_outputs=2, max_factor=64)
    cfg.define_reorder("order", 4, "candidate", MATMUL_ORDERS)
    cfg.define_annotate("ann_outer", 1, "try_parallel")
    cfg.define_annotate("ann_rows", 1, "try_unroll")
    cfg.define_annotate("ann_cols", 1, "try_vec")
    cfg.add_flop(2 * n * m * k)

    i, j = s[c].op.axis
    io, ii = s[c].split(i, factor=cfg["tile_i"].size[1])
    jo, ji = s[c].split(j, factor=cfg["tile_j"].size[1])
    s[c].reorder(io, jo, ii, ji)
    _annotate(s[c], io, cfg["ann_outer"].anns[0])
    s[c].vectorize(ji)
    s[acc].compute_at(s[c], jo)

    ai, aj = s[acc].op.axis
    (ak,) = s[acc].op.reduce_axis
    ko, ki = s[acc].split(ak, factor=cfg["tile_k"].size[1])
    loops = [ko, ki, ai, aj]
    s[acc].reorder(*[loops[p] for p in cfg["order"].perm])
    _annotate(s[acc], ai, cfg["ann_rows"].anns[0])
    _annotate(s[acc], aj, cfg["ann_cols"].anns[0])
    return s, [a, b, c]


@register_reference("matmul")
def matmul_reference(inputs, n, m, k):
    a, b = inputs
    return [a @ b]


@register_template("conv2d_nchw", "llvm")
def conv2d_nchw(cfg, c: int, h: int, w: int, f: int, kh: int, kw: int, stride: int = 1):
    """Batch-1 NCHW float32 conv2d with padding kh // 2: out[f, y, x]."""
    pad = kh // 2
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    data = te.placeholder((c, h, w), "float32", "data")
    kernel = te.placeholder((f, c, kh, kw), "float32", "kernel")
    padded = te.compute(
        (c, h + 2 * pad, w + 2 * pad),
        lambda ci, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
            data[ci, y - pad, x - pad],
            te.const(0.0, "float32"),
        ),
        name="data_pad",
    )
    rc, ry, rx = te.reduce_axis(c, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    out = te.compute(
        (f, oh, ow),
        lambda ff, y, x: te.sum(
            padded[rc, y * stride + ry, x * stride + rx] * kernel[ff, rc, ry, rx],
            axis=[rc, ry, rx],
        ),
        name="conv",
    )
    s = te.create_schedule(out.op)  # the padded copy stays a root stage: no branch in the kernel
    acc = s.cache_write(out, "local")

    cfg.define_split("tile_f", f, num_outputs=2, max_factor=16)
    cfg.define_split("tile_y", oh, num_outputs=2, max_factor=8)
    cfg.define_split("tile_x", ow, num_outputs=2, max_factor=32)
    cfg.define_split("tile_rc", c, num_outputs=2, max_factor=32)
    cfg.define_reorder("order", 3, "all")  # rc.outer, ry, rx around the register tile
    cfg.define_annotate("ann_outer", 1, "try_parallel")
    cfg.define_annotate("ann_rows", 1, "try_unroll")
    cfg.define_annotate("ann_cols", 1, "try_vec")
    cfg.add_flop(2 * c * oh * ow * f * kh * kw)

    ff, y, x = s[out].op.axis
    fo, fi = s[out].split(ff, factor=cfg["tile_f"].size[1])
    yo, yi = s[out].split(y, factor=cfg["tile_y"].size[1])
    xo, xi = s[out].split(x, factor=cfg["tile_x"].size[1])
    s[out].reorder(fo, yo, xo, fi, yi, xi)
    _annotate(s[out], fo, cfg["ann_outer"].anns[0])
    s[out].vectorize(xi)
    s[acc].compute_at(s[out], xo)

    af, ay, ax = s[acc].op.axis
    arc, ary, arx = s[acc].op.reduce_axis
    rco, rci = s[acc].split(arc, factor=cfg["tile_rc"].size[1])
    outer = [rco, ary, arx]
    s[acc].reorder(*[outer[p] for p in cfg["order"].perm], rci, af, ay, ax)
    _annotate(s[acc], af, cfg["ann_rows"].anns[0])
    _annotate(s[acc], ax, cfg["ann_cols"].anns[0])
    return s, [data, kernel, out]


@register_reference("conv2d_nchw")
def conv2d_reference(inputs, c, h, w, f, kh, kw, stride=1):
    data, kernel = (x.astype(np.float64) for x in inputs)
    pad = kh // 2
    padded = np.pad(data, ((0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    out = np.zeros((f, oh, ow))
    for ry in range(kh):
        for rx in range(kw):
            window = padded[:, ry : ry + stride * oh : stride, rx : rx + stride * ow : stride]
            out += np.einsum("chw,fc->fhw", window, kernel[:, :, ry, rx])
    return [out.astype(np.float32)]
