"""Depthwise NCHW convolution on the GPU: channels, rows and columns tiled over blocks, virtual
threads and threads, the output tile in registers; optionally the block's padded input window
and its filters staged in shared memory first (each input element is read by up to KH x KW
threads)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import te
from ...te.tensor import Tensor
from .utils import cooperative_fetch, tile_output


def schedule_depthwise_conv2d_nchw(
    conv: Tensor,
    tile_f: Sequence[int],
    tile_y: Sequence[int],
    tile_x: Sequence[int],
    stage_shared: bool = True,
    unroll: bool = True,
) -> te.Schedule:
    s = te.create_schedule(conv.op)
    padded, kernel = conv.op.input_tensors
    if padded.op in s.stage_map:
        s[padded].compute_inline()
    ol = s.cache_write(conv, "local")
    caches = []
    if stage_shared:
        caches = [s.cache_read(padded, "shared", [ol]), s.cache_read(kernel, "shared", [ol])]
    tx, threads = tile_output(s, conv, tile_f, tile_y, tile_x)
    s[ol].compute_at(s[conv], tx)
    ry, rx = s[ol].op.reduce_axis
    n, f, y, x = s[ol].op.axis
    s[ol].reorder(ry, rx, n, f, y, x)
    for loop in (n, f, y, x) + ((ry, rx) if unroll else ()):
        s[ol].unroll(loop)
    for cache in caches:
        s[cache].compute_at(s[conv], tx)
        cooperative_fetch(s[cache], threads)
    return s
