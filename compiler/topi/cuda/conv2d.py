"""Direct NCHW convolution on the GPU (TVM's conv2d_nchw direct CUDA schedule): output channels,
rows and columns are tiled over blocks (z, y, x), virtual threads and threads; each thread keeps
its output tile in registers; per reduction step the block stages the padded input window and
the filter slice in shared memory, fetched cooperatively. The zero padding is inlined into the
fetch (no padded copy in global memory)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import te
from ...te.tensor import Tensor
from .utils import bind_tile, cooperative_fetch, thread_extent


def schedule_conv2d_nchw(
    conv: Tensor,
    tile_f: Sequence[int],
    tile_y: Sequence[int],
    tile_x: Sequence[int],
    tile_rc: int,
    tile_ry: int,
    tile_rx: int,
    unroll: bool = True,
) -> te.Schedule:
    """conv: topi.nn.conv2d_nchw with batch 1; tiles as schedule_matmul's; tile_r*: the input
    channels and kernel rows/columns staged per reduction step."""
    s = te.create_schedule(conv.op)
    padded, kernel = conv.op.input_tensors
    if padded.op in s.stage_map:
        s[padded].compute_inline()
    ol = s.cache_write(conv, "local")
    aa = s.cache_read(padded, "shared", [ol])
    ww = s.cache_read(kernel, "shared", [ol])
    n, f, y, x = s[conv].op.axis
    bf, vf, tf, fi = bind_tile(s[conv], f, tile_f, "z")
    by, vy, ty, yi = bind_tile(s[conv], y, tile_y, "y")
    bx, vx, tx, xi = bind_tile(s[conv], x, tile_x, "x")
    s[conv].reorder(n, bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    for loop in (fi, yi, xi):
        s[conv].unroll(loop)
    s[ol].compute_at(s[conv], tx)
    n, f, y, x = s[ol].op.axis
    rc, ry, rx = s[ol].op.reduce_axis
    rco, rci = s[ol].split(rc, factor=tile_rc)
    ryo, ryi = s[ol].split(ry, factor=tile_ry)
    rxo, rxi = s[ol].split(rx, factor=tile_rx)
    s[ol].reorder(rco, ryo, rxo, rci, ryi, rxi, n, f, y, x)
    for loop in (n, f, y, x) + ((rci, ryi, rxi) if unroll else ()):
        s[ol].unroll(loop)
    _, nf, ny, nx = conv.shape
    threads = [
        (thread_extent(nf, tile_f), "threadIdx.z"),
        (thread_extent(ny, tile_y), "threadIdx.y"),
        (thread_extent(nx, tile_x), "threadIdx.x"),
    ]
    for cache in (aa, ww):
        s[cache].compute_at(s[ol], rxo)
        cooperative_fetch(s[cache], threads)
    return s
