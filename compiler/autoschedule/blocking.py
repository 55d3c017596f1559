"""Panel tilings of a multi-level tiled matmul: accumulators held through the reduction and a
panel of the held operand kept in L2 across row tiles.

The register tile (`register_tile.py`) fixes the innermost level of a stage tiled SSRSRS; the
outer levels decide where the data comes from. In a matmul C[i, j] = sum_k A[i, k] * B[k, j]
tiled as i.0 j.0 i.1 j.1 k.0 i.2 j.2 k.1 i.3 j.3, two properties separate fast tilings from
slow ones on an AVX2 host with a 512 KB L2 (1024^3, one thread):

* accumulators held through the reduction: with i.2 = j.2 = 1 the register tile's
  accumulators stay in registers across k.0 and k.1 (about 80 GFLOPS with a 4 x 16 tile);
  with a level-2 tile of several register tiles they are stored and loaded again every k.0
  step (20-38 GFLOPS for k.1 of 4-8);
* a panel of B kept in L2 across row tiles: the K x (j.1 x j.2 x j.3) panel one run of i.1
  reads fits in L2, so the row tiles i.1 walks read it from there, as the template tuner's
  loop order (panels outside row tiles, `topi.x86.dense`) does. Without it every row tile
  streams its panels from L3 or memory again: in samples on that host as fast when the L3
  was quiet, but the L3 is shared with the other cores' work and the L2 is the core's own.

A *panel tiling* has both. `nest` gives a tiling's loops, `panel_faults` counts the
properties a tiling misses. The model needs every index of the stage's loads to be a loop
variable, or a variable's `// c` or `% c` (matmul's A, B, its packed copy), so that an
operand's footprint in a loop -- the elements its loads touch while the loop runs -- is the
product of the extents inside that loop of the variables it uses; elsewhere (a convolution's
y + ky) `panel_faults` is None and annotation draws as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..codegen.target import Target, cpu_facts
from ..te.tensor import ComputeOp
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir.functor import collect
from . import register_tile as rt

L2_SHARE = 0.5  # of L2 a panel may fill and stay (the other operands stream beside it)

Loop = tuple[E.Var, int, bool]  # (the root axis' variable a loop walks, its extent, reduction?)


def l2_bytes(target: str) -> int | None:
    """The L2 cache per core of a CPU (llvm) target; None for other targets."""
    if target.split()[0] != "llvm":
        return None
    return cpu_facts(Target.parse(target)).l2_bytes


def _index_var(index: E.Expr) -> E.Var | None:
    """The variable an index walks: a variable, or a variable's `// c` or `% c`."""
    if isinstance(index, E.FloorDiv | E.FloorMod) and isinstance(index.b, E.IntImm):
        index = index.a
    return index if isinstance(index, E.Var) else None


def held_operands(op: ComputeOp) -> list[tuple[frozenset[E.Var], int]] | None:
    """The inputs a register tile holds (read along the vectorized axis and a reduction, not
    along some other space axis of extent > 1: matmul's B), each as the loop variables its
    indices use and its element size; None when an index of a load is not a variable (or its
    `// c`, `% c`)."""
    vec = rt.vector_axis(op)
    if vec is None:
        return None
    found: dict[int, tuple[frozenset[E.Var], int]] = {}
    for load in collect(op.body, lambda n: isinstance(n, E.ProducerLoad)):
        used = [_index_var(i) for i in load.indices]
        if any(v is None for v in used):
            return None
        t = load.producer
        prev = found.get(id(t), (frozenset(), 0))[0]
        found[id(t)] = (prev | frozenset(used), dt.itemsize(t.dtype))  # type: ignore[arg-type]
    rows = {iv.var for iv in op.axis if int(iv.dom.extent.value) > 1}
    reduce_vars = {iv.var for iv in op.reduce_axis}
    return [
        (used, size)
        for used, size in found.values()
        if op.axis[vec].var in used and used & reduce_vars and rows - used
    ]


def nest(
    op: ComputeOp, lengths: dict[int, Sequence[int]], order: Sequence[int]
) -> list[Loop] | None:
    """The loops of a stage whose root axis `pos` (op.axis, then op.reduce_axis) is split
    into inner lengths `lengths[pos]` (absent: not split), then reordered by `order` (leaf
    positions, all of them; else None)."""
    axes = [*op.axis, *op.reduce_axis]
    leaves: list[Loop] = []
    for pos, iv in enumerate(axes):
        extent, red = int(iv.dom.extent.value), iv.kind == "reduce"
        inner = list(lengths.get(pos, ()))
        leaves.append((iv.var, extent // max(1, math.prod(inner)), red))
        leaves += [(iv.var, n, red) for n in inner]
    if sorted(order) != list(range(len(leaves))):
        return None
    return [leaves[p] for p in order]


def between_reductions(op: ComputeOp, parts: dict[int, int], order: Sequence[int]) -> set:
    """(axis position, level) of the space loops between the outermost and the innermost
    reduction loop of a stage whose axis `pos` is split into parts[pos] + 1 loops: the level
    of the tile whose accumulators a reduction step passes through (i.2, j.2 above)."""
    axes = [*op.axis, *op.reduce_axis]
    leaves = [(pos, lv) for pos in range(len(axes)) for lv in range(parts.get(pos, 0) + 1)]
    if sorted(order) != list(range(len(leaves))):
        return set()
    loops = [leaves[p] for p in order]
    red = [k for k, (pos, _) in enumerate(loops) if axes[pos].kind == "reduce"]
    if not red:
        return set()
    return {(pos, lv) for pos, lv in loops[red[0] + 1 : red[-1]] if axes[pos].kind != "reduce"}


def panel_faults(op: ComputeOp, loops: Sequence[Loop], cache: int) -> int | None:
    """How many of the two panel properties (module docstring) the loop nest misses: a space
    loop of extent > 1 between the reduction loops, and a held operand whose panel does not
    stay in L2_SHARE of `cache` across the row loops above the reductions (no row loop above
    them of extent > 1 whose whole run touches at most that much of it). None where the model
    does not apply (no held operand, or an index that is not a loop variable)."""
    held = held_operands(op)
    if not held:
        return None
    red = [k for k, (_, _, r) in enumerate(loops) if r]
    if not red:
        return None
    faults = int(any(not r and n > 1 for _, n, r in loops[red[0] + 1 : red[-1]]))
    for used, size in held:
        resident = False
        for t in range(red[0]):
            var, extent, _ = loops[t]
            if extent > 1 and var not in used:
                inside: dict[E.Var, int] = {}
                for v, n, _ in loops[t:]:
                    inside[v] = inside.get(v, 1) * n
                footprint = size * math.prod(inside.get(v, 1) for v in used)
                resident = resident or footprint <= L2_SHARE * cache
        faults += not resident
    return faults
