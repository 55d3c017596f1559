"""Matrix multiplication on the GPU: each block computes a tile of C from tiles of A and B
staged through shared memory; each thread accumulates a register tile (in `local` memory,
fully unrolled so it stays in registers)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import te
from ...te.tensor import Tensor
from .utils import bind_tile, cooperative_fetch, thread_extent


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """C[i, j] = sum_k A[i, k] * B[k, j] (no casts: operands share C's dtype)."""
    n, k = a.shape
    _, m = b.shape
    r = te.reduce_axis(k, "k")
    return te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), "matmul")


def schedule_matmul(
    c: Tensor,
    tile_y: Sequence[int],
    tile_x: Sequence[int],
    tile_k: int,
    vector: int = 1,
    unroll_k: bool = True,
) -> te.Schedule:
    """tile_y, tile_x: (blocks, vthreads, threads, per-thread) of rows and columns; tile_k:
    the reduction step staged in shared memory; vector: elements per shared-memory fetch."""
    s = te.create_schedule(c.op)
    a, b = c.op.input_tensors
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    cl = s.cache_write(c, "local")
    y, x = s[c].op.axis
    by, vy, ty, yi = bind_tile(s[c], y, tile_y, "y")
    bx, vx, tx, xi = bind_tile(s[c], x, tile_x, "x")
    s[c].reorder(by, bx, vy, vx, ty, tx, yi, xi)
    s[c].unroll(yi)
    s[c].unroll(xi)
    s[cl].compute_at(s[c], tx)
    yo, xo = s[cl].op.axis
    ko, ki = s[cl].split(s[cl].op.reduce_axis[0], factor=tile_k)
    s[cl].reorder(ko, ki, yo, xo)
    if unroll_k:
        s[cl].unroll(ki)
    s[cl].unroll(yo)
    s[cl].unroll(xo)
    threads = [
        (thread_extent(c.shape[0], tile_y), "threadIdx.y"),
        (thread_extent(c.shape[1], tile_x), "threadIdx.x"),
    ]
    for cache in (aa, bb):
        s[cache].compute_at(s[cl], ko)
        cooperative_fetch(s[cache], threads, vector)
    return s
