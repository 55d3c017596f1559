"""Tiling an axis over blocks, virtual threads, threads and a per-thread register tile, and
cooperative fetching into shared memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ... import te
from ...schedule.schedule import Stage
from ...te.tensor import IterVar, Tensor


class Tile(NamedTuple):
    """Sizes of an axis split four ways, outermost first: blocks, virtual threads, threads,
    elements per thread (AutoTVM's four-way split)."""

    block: int
    vthread: int
    thread: int
    inner: int


def bind_tile(stage: Stage, axis: IterVar, tile: Sequence[int], dim: str) -> list[IterVar]:
    """Split `axis` by `tile` and bind the parts to blockIdx.dim, vthread and threadIdx.dim;
    returns the four loops, outermost first."""
    _, vt, th, inner = tile
    rest, i = stage.split(axis, factor=inner)
    rest, t = stage.split(rest, factor=th)
    b, v = stage.split(rest, factor=vt)
    stage.bind(b, te.thread_axis(f"blockIdx.{dim}"))
    stage.bind(v, te.thread_axis("vthread"))
    stage.bind(t, te.thread_axis(f"threadIdx.{dim}"))
    return [b, v, t, i]


def thread_extent(extent: int, tile: Sequence[int]) -> int:
    """Threads a four-way split of an axis of `extent` really binds (a tile larger than the
    axis is clipped, as split does)."""
    inner = min(tile[3], extent)
    return min(tile[2], -(-extent // inner))


def cooperative_fetch(stage: Stage, threads: Sequence[tuple[int, str]], vector: int = 1) -> None:
    """Spread a shared-memory copy over the block's threads: its loops are fused, the innermost
    `vector` elements copied as one vector, then consecutive threads (threads[-1] varies
    fastest) take consecutive chunks, so global reads are coalesced."""
    fused = stage.fuse(*stage.op.axis)
    if vector > 1:
        fused, vec = stage.split(fused, factor=vector)
        stage.vectorize(vec)
    for extent, tag in reversed(threads):
        fused, t = stage.split(fused, factor=extent)
        stage.bind(t, te.thread_axis(tag))


def tile_output(
    s, out: Tensor, tile_f: Sequence[int], tile_y: Sequence[int], tile_x: Sequence[int]
) -> tuple[IterVar, list[tuple[int, str]]]:
    """Tile an NCHW output's channels, rows and columns over blocks (z, y, x), virtual threads
    and threads, with each thread's tile unrolled innermost; returns the innermost thread loop
    (where a thread's register tile is computed) and the (extent, tag) of the block's threads
    for cooperative fetches."""
    n, f, y, x = s[out].op.axis
    bf, vf, tf, fi = bind_tile(s[out], f, tile_f, "z")
    by, vy, ty, yi = bind_tile(s[out], y, tile_y, "y")
    bx, vx, tx, xi = bind_tile(s[out], x, tile_x, "x")
    s[out].reorder(n, bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    for loop in (fi, yi, xi):
        s[out].unroll(loop)
    _, nf, ny, nx = out.shape
    threads = [
        (thread_extent(nf, tile_f), "threadIdx.z"),
        (thread_extent(ny, tile_y), "threadIdx.y"),
        (thread_extent(nx, tile_x), "threadIdx.x"),
    ]
    return tx, threads
