"""Direct NCHW convolution on the GPU (TVM's conv2d_nchw direct CUDA schedule): output channels,
rows and columns are tiled over blocks (z, y, x), virtual threads and threads; each thread keeps
its output tile in registers; per reduction step the block stages the padded input window and
the filter slice in shared memory, fetched cooperatively. The zero padding is inlined into the
fetch (no padded copy in global memory)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import te
from ...te.tensor import Tensor
from .utils import cooperative_fetch, tile_output


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
    tx, threads = tile_output(s, conv, tile_f, tile_y, tile_x)
    s[ol].compute_at(s[conv], tx)
    n, f, y, x = s[ol].op.axis
    rc, ry, rx = s[ol].op.reduce_axis
    rco, rci = s[ol].split(rc, factor=tile_rc)
    ryo, ryi = s[ol].split(ry, factor=tile_ry)
    rxo, rxi = s[ol].split(rx, factor=tile_rx)
    s[ol].reorder(rco, ryo, rxo, rci, ryi, rxi, n, f, y, x)
    for loop in (n, f, y, x) + ((rci, ryi, rxi) if unroll else ()):
        s[ol].unroll(loop)
    for cache in (aa, ww):
        s[cache].compute_at(s[ol], rxo)
        cooperative_fetch(s[cache], threads)
    return s
