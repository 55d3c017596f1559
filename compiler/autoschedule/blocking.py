"""Panel tilings of a multi-level tiled matmul or convolution: accumulators held through the
reduction, a register tile within one block of the held operand, and a panel of it kept in L2
across row tiles.

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

In a convolution (NCHW[x]c: out[oc, y, x, ob] = sum over ic, ky, kx of
data[ic, y + ky, x + kx] * weight[oc, ic, ky, kx, ob]) the held operand is the weights, read
along oc as well as the vectorized ob. In 200 random guided programs of ResNet-18's C6 and
C9 (same host, one thread; padding not inlined, `annotate.inlines_condition`) a third
property separated them most: a register tile within one output-channel block (oc.3 = 1, the
whole block on ob: medians 73 and 63 GFLOPS, against 67 and 51 for two blocks of two vectors
and 40 and 30 for four blocks of one vector; the template's rows x columns x oc_bn tile is of
this kind). Held accumulators alone did not separate conv tilings (some of the fastest C9
draws ran 196 register tiles between the reduction levels), but with the other two they did
on C9: 38 draws with all three ran at a median of 58 GFLOPS against 39 for 100 draws of the
matmul-only rule, re-measured interleaved.

A *panel tiling* has all three (matmul's B is read along one space axis, so its register
tiles always have the second). `nest` gives a tiling's loops, `panel_faults` counts the
properties a tiling misses. The model needs every index of the stage's loads to be affine in
the loop variables (a sum of c x v plus a constant: a convolution's y * stride + ky), or a
variable's `// c` or `% c` (matmul's packed B): an operand's footprint in a loop -- the
elements its loads touch while the loop runs -- is the product over its indices of the
values each takes, sum over its variables of |c| x (extent inside the loop - 1), plus 1
(`Span`); elsewhere `panel_faults` is None and annotation draws as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..arith.linear import linear
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


class Span:
    """An index of a load as the footprint model reads it: a sum of coefficient x loop
    variable plus a constant (a convolution's y * stride + ry), or one variable's `// c` or
    `% c` (a packed operand's panel and lane)."""

    def __init__(self, terms: dict[E.Var, int], div: int = 0, mod: int = 0):
        self.terms, self.div, self.mod = terms, div, mod

    def width(self, inside: dict[E.Var, int]) -> int:
        """How many values the index takes while each variable `v` walks `inside[v]`
        consecutive values (1 where absent): sum of |c| x (extent - 1), plus 1."""
        if self.div or self.mod:
            ((v, _),) = self.terms.items()
            n = inside.get(v, 1)
            return (n - 1) // self.div + 1 if self.div else min(n, self.mod)
        return sum(abs(c) * (inside.get(v, 1) - 1) for v, c in self.terms.items()) + 1


def span(index: E.Expr) -> Span | None:
    """The footprint model of an index (`Span`); None where it does not apply."""
    if isinstance(index, E.FloorDiv | E.FloorMod) and isinstance(index.b, E.IntImm):
        if not isinstance(index.a, E.Var):
            return None
        c = int(index.b.value)
        if isinstance(index, E.FloorDiv):
            return Span({index.a: 1}, div=c)
        return Span({index.a: 1}, mod=c)
    form = linear(index)
    return None if form is None else Span({v: c for v, c in form[0].items() if c})


class Operand:
    """An input of a stage as the footprint model sees it: the indices of each of its loads
    and its element size."""

    def __init__(self, loads: list[list[Span]], size: int):
        self.loads, self.size = loads, size

    @property
    def used(self) -> set[E.Var]:
        """The loop variables its indices use."""
        return {v for load in self.loads for sp in load for v in sp.terms}

    def footprint(self, inside: dict[E.Var, int]) -> int:
        """Bytes its loads touch while each variable `v` walks `inside[v]` consecutive
        values: per load the product of its indices' widths (loads of one tensor summed, a
        bound on their union)."""
        return self.size * sum(math.prod(sp.width(inside) for sp in load) for load in self.loads)


def operands(op: ComputeOp) -> list[Operand] | None:
    """The inputs of a stage (`Operand`), one per tensor, in order of first load; None when
    an index of a load is not affine in the loop variables (nor a variable's `// c`, `% c`)."""
    found: dict[int, Operand] = {}
    for load in collect(op.body, lambda n: isinstance(n, E.ProducerLoad)):
        spans = [span(i) for i in load.indices]
        if any(sp is None for sp in spans):
            return None
        t = load.producer
        found.setdefault(id(t), Operand([], dt.itemsize(t.dtype))).loads.append(spans)  # type: ignore[arg-type]
    return list(found.values())


def held_operands(op: ComputeOp) -> list[Operand] | None:
    """The inputs a register tile holds (read along the vectorized axis and a reduction, not
    along some other space axis of extent > 1: matmul's B, a convolution's weights); None
    when an index of a load is not affine (`operands`)."""
    vec = rt.vector_axis(op)
    found = operands(op) if vec is not None else None
    if found is None:
        return None
    rows = {iv.var for iv in op.axis if int(iv.dom.extent.value) > 1}
    reduce_vars = {iv.var for iv in op.reduce_axis}
    return [
        o
        for o in found
        if op.axis[vec].var in o.used and o.used & reduce_vars and rows - o.used  # type: ignore[index]
    ]


def nest(
    op: ComputeOp, lengths: dict[int, Sequence[int]], order: Sequence[int]
) -> list[Loop] | None:
    """The loops of a stage whose root axis `pos` (op.axis, then op.reduce_axis) is split
    into inner lengths `lengths[pos]` (absent: not split; the outer loop runs the last tile
    cut short where they do not divide the extent), then reordered by `order` (leaf
    positions, all of them; else None)."""
    axes = [*op.axis, *op.reduce_axis]
    leaves: list[Loop] = []
    for pos, iv in enumerate(axes):
        extent, red = int(iv.dom.extent.value), iv.kind == "reduce"
        inner = list(lengths.get(pos, ()))
        leaves.append((iv.var, -(-extent // max(1, math.prod(inner))), red))  # a cut tile too
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


def held_axes(op: ComputeOp) -> set[int]:
    """The space axes besides the vectorized one that a held operand is read along (a
    convolution's output-channel blocks); a panel tiling's register tile spans none of them."""
    vec = rt.vector_axis(op)
    used = set().union(*(o.used for o in held_operands(op) or []))
    return {p for p, iv in enumerate(op.axis) if p != vec and iv.var in used}


def tile_panel_fits(op: ComputeOp, tile: dict[E.Var, int], cache: int) -> bool:
    """Whether what one register tile (`tile[v]`: its length along the space axis of `v`, 1
    where absent) reads of each held operand over the whole reduction within one held block
    (`held_axes` at 1) -- the smallest panel a tiling with its width can keep -- fits in
    L2_SHARE of `cache`. Where it does not (ResNet-18's C12 with 16 output channels a tile:
    295 KB of weights), no such tiling keeps a panel and the model does not apply."""
    blocks = {op.axis[p].var for p in held_axes(op)}
    inside = {v: n for v, n in tile.items() if v not in blocks}
    inside.update((iv.var, int(iv.dom.extent.value)) for iv in op.reduce_axis)
    return all(o.footprint(inside) <= L2_SHARE * cache for o in held_operands(op) or [])


def panel_faults(op: ComputeOp, loops: Sequence[Loop], cache: int) -> int | None:
    """How many of the three panel properties (module docstring) the loop nest misses: a
    space loop of extent > 1 between the reduction loops; a register tile (the loops inside
    the innermost reduction loop) spanning more than one block of a held operand (a loop of
    extent > 1 on a `held_axes` axis); and a held operand whose panel does not stay in
    L2_SHARE of `cache` across the row loops above the reductions (no row loop above them of
    extent > 1 whose whole run touches at most that much of it). None where the model does
    not apply (no held operand, an index that is not affine in the loop variables, or a
    register tile whose own panel does not fit: `tile_panel_fits`)."""
    held = held_operands(op)
    if not held:
        return None
    red = [k for k, (_, _, r) in enumerate(loops) if r]
    if not red:
        return None
    tile: dict[E.Var, int] = {}
    for v, n, r in loops[red[-1] + 1 :]:
        if not r:
            tile[v] = tile.get(v, 1) * n
    if not tile_panel_fits(op, tile, cache):
        return None
    faults = int(any(not r and n > 1 for _, n, r in loops[red[0] + 1 : red[-1]]))
    blocks = {op.axis[p].var for p in held_axes(op)}
    faults += any(n > 1 and v in blocks for v, n, _ in loops[red[-1] + 1 :])
    for operand in held:
        used, resident = operand.used, False
        for t in range(red[0]):
            var, extent, _ = loops[t]
            if extent > 1 and var not in used:
                inside: dict[E.Var, int] = {}
                for v, n, _ in loops[t:]:
                    inside[v] = inside.get(v, 1) * n
                resident = resident or operand.footprint(inside) <= L2_SHARE * cache
        faults += not resident
    return faults
