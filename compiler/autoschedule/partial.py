"""Split lengths: exact ones (`factorizations`) and partial register tiles, innermost space
tiles that do not divide their axis.

With exact divisors only, a 7 x 7 output (ResNet-18's C12) offers register tiles of 1 or 7
points along each axis, and a 14 x 14 one (C9) 1, 2, 7 or 14: on AVX2 (16 registers, a
16-channel block of 2 vectors) the largest tile that fits holds 7 accumulators of one vector,
or 4 of two. A partial tile of n points covers the axis with ceil(extent / n) tiles, the last
one cut short (6 + 1 columns, or 4 + 3 rows as the template's `tile_oh` does): the split's
lowering guards the cut tile, and loop partitioning (`tir/transform/partition.py`) moves the
guards out of the full tiles, which keep their vectors and unrolled accumulators. A split's
outer levels then factorize the tile count, so no level runs wholly outside the axis.

Only the unrolled space axes of a multi-level tiled stage take partial tiles (the vectorized
axis keeps whole vectors; reductions stay exact, a guard there would run at every step).

The partitioning needs a serial loop over the cut axis' tiles to split off the cut tile: fused
into the parallel loop, the cut tile is a set of the parallel loop's iterations, its guards
stay at every point of it, and on an AVX2 host (2 threads, ResNet-18's C12) tiles of 2 x 3
and 3 x 2 points ran at 10-20 GFLOPS against 68-73 with the parallel loop stopping above
the cut axis (`cut_loops`; `annotate.parallel_counts` prefers such parallel loops).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from ..schedule.schedule import Fuse, Split, Stage
from .steps import loop_extents

PARTIAL = 0.5  # share of guided register tile draws whose unrolled axes may be partial


def tile_count(extent: int, inner: int) -> int:
    """How many tiles of `inner` points cover an axis of `extent` (the last one partial when
    `inner` does not divide it)."""
    return -(-extent // max(1, inner))


@lru_cache(maxsize=4096)
def factorizations(extent: int, parts: int) -> tuple[tuple[int, ...], ...]:
    """Every way to write `extent` as an ordered product of `parts` factors (exact splits)."""
    if parts == 1:
        return ((extent,),)
    out = []
    for d in range(1, extent + 1):
        if extent % d == 0:
            out += [(d, *rest) for rest in factorizations(extent // d, parts - 1)]
    return tuple(out)


@lru_cache(maxsize=4096)
def partial_options(extent: int, parts: int, limit: int) -> tuple[tuple[int, ...], ...]:
    """Splits of `extent` into `parts` levels (outer first) whose innermost length n, at most
    `limit`, does not divide it and whose outer levels factorize ceil(extent / n)."""
    out: list[tuple[int, ...]] = []
    for inner in range(2, min(extent - 1, limit) + 1):
        if extent % inner:
            out += [(*f, inner) for f in factorizations(tile_count(extent, inner), parts - 1)]
    return tuple(out)


def split_levels(extent: int, lengths: Sequence[int]) -> list[int] | None:
    """[outer, *lengths] of a split whose levels exactly cover the tiles of its innermost
    length (all of the axis for an exact split); None when they do not."""
    inner = lengths[-1] if lengths else 1
    tiles = tile_count(extent, inner)
    middle = math.prod(lengths[:-1])
    if tiles % middle:
        return None
    return [tiles // middle, *lengths[:-1], inner] if lengths else [extent]


def is_partial(extent: int, lengths: Sequence[int]) -> bool:
    """Does a split's innermost length leave a cut tile?"""
    return bool(lengths) and extent % lengths[-1] != 0


def retile(extent: int, lengths: Sequence[int], inner: int) -> tuple[int, ...]:
    """A split's lengths with innermost length `inner`: its middle levels kept where they
    factorize the new tile count, else each folded into the outer loop (set to 1)."""
    tiles = tile_count(extent, inner)
    middle: list[int] = []
    for n in lengths[:-1]:
        keep = tiles % (math.prod(middle) * n) == 0
        middle.append(n if keep else 1)
    return (*middle, inner)


def cut_loops(st: Stage) -> set:
    """The loops of a stage that run over a cut tile's padded range: the outer loop of a split
    whose factor does not divide its loop, the loops split or fused from such a loop."""
    ext, cut = loop_extents(st), set()
    for rel in st.relations:
        if isinstance(rel, Split):
            if rel.parent in cut:
                cut |= {rel.outer, rel.inner}
            elif rel.factor and ext[rel.parent] % rel.factor:
                cut.add(rel.outer)
        elif isinstance(rel, Fuse) and (rel.outer in cut or rel.inner in cut):
            cut.add(rel.fused)
    return cut
