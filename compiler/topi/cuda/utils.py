"""Tiling an axis over blocks, virtual threads, threads and a per-thread register tile, and
cooperative fetching into shared memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ... import te
from ...schedule.schedule import Stage
from ...te.tensor import IterVar


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
