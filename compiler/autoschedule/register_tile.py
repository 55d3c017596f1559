"""The register tile of a multi-level tiled stage, and whether it fits the target's registers.

A stage tiled SSRSRS on the CPU runs its innermost space tile (the last level of every space
axis, inside the last reduction level) as a block of accumulators: the last space axis is
vectorized, the others unrolled, and every step of the reduction loops around the tile updates
all of them. That pays when

* the vectorized extent is a multiple of the vector lanes (no partial vectors), and
* accumulators + held operand vectors + one broadcast <= the vector registers, where the
  accumulators are the tile's points in whole vectors and an operand read along the vector
  axis but not along every tiled space axis (matmul's B, a conv's weights) is reused across
  the tile, so its distinct vectors in the tile stay in registers too

(the rule the hand-written x86 schedules follow, `topi.x86.conv2d.tile_columns`), and best
when a reduction step issues no more loads (operand vectors and broadcasts) than FMAs
(`load_bound`). Guided annotation (`annotate.py`) samples tile sizes under these constraints
(the last a preference: a load-bound draw is redrawn) and unroll limits that cover the tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from ..codegen.target import Target, cpu_facts
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir.functor import collect, free_vars


@dataclass(frozen=True)
class RegisterFile:
    """Vector lanes of the stage's data type and the number of vector registers."""

    lanes: int
    registers: int


def register_file(target: str, dtype: str) -> RegisterFile | None:
    """The register file of a CPU (llvm) target; None for other targets."""
    if target.split()[0] != "llvm":
        return None
    facts = cpu_facts(Target.parse(target))
    return RegisterFile(facts.lanes(dtype), facts.vector_registers)


def vector_axis(op: ComputeOp) -> int | None:
    """The space axis the tiled loop nest vectorizes: the last one of extent > 1."""
    for pos in reversed(range(len(op.axis))):
        if int(op.axis[pos].dom.extent.value) > 1:
            return pos
    return None


def lane_multiples(extent: int, lanes: int, limit: int) -> list[int]:
    """Innermost lengths of a vectorized axis that are whole vectors (empty if the extent has
    no such divisor)."""
    return [d for d in range(lanes, min(extent, limit) + 1, lanes) if extent % d == 0]


def _tile(op: ComputeOp, inner: dict[int, int], lanes: int) -> list[int]:
    """The tile's extent along every space axis, the vectorized one in whole vectors."""
    vec = vector_axis(op)
    size = [inner.get(p, 1) for p in range(len(op.axis))]
    if vec is not None:
        size[vec] = math.ceil(size[vec] / lanes)
    return size


@lru_cache(maxsize=1024)
def _operands(op: ComputeOp) -> tuple[frozenset[int], ...]:
    """Per load of the body, the space axes (positions) its indices use (cached: annotation
    asks for every candidate tile)."""
    axis_vars = [iv.var for iv in op.axis]
    out = []
    for load in collect(op.body, lambda n: isinstance(n, E.ProducerLoad)):
        used_vars = set().union(*(free_vars(i) for i in load.indices)) if load.indices else set()
        out.append(frozenset(p for p, v in enumerate(axis_vars) if v in used_vars))
    return tuple(out)


def registers_needed(op: ComputeOp, inner: dict[int, int], lanes: int) -> int:
    """Vector registers a register tile of `inner[pos]` points along space axis `pos` (1 where
    absent) keeps live: accumulators, held operand vectors and a broadcast."""
    vec = vector_axis(op)
    if vec is None:
        return 1
    size = _tile(op, inner, lanes)
    tiled = {p for p, n in enumerate(size) if n > 1}
    held = sum(
        math.prod(size[p] for p in used)
        for used in _operands(op)
        if vec in used and not tiled <= used
    )
    return math.prod(size) + held + 1


def load_bound(op: ComputeOp, inner: dict[int, int], lanes: int) -> bool:
    """Does a reduction step of the tile issue more loads (per operand, its distinct vectors
    or broadcasts in the tile) than FMAs? A one-row matmul tile of 8 vectors issues 8 + 1
    loads for 8 FMAs (B streams through the cache once per row), an 8-row tile of one vector
    1 + 8, a 4-row tile of 2 vectors 2 + 4."""
    size = _tile(op, inner, lanes)
    loads = sum(math.prod(size[p] for p in used) for used in _operands(op))
    return loads > math.prod(size)


def fits(op: ComputeOp, inner: dict[int, int], rf: RegisterFile) -> bool:
    """Does the register tile use whole vectors (when the vector axis' extent allows) and fit
    the registers?"""
    vec = vector_axis(op)
    if vec is None:
        return True
    whole = int(op.axis[vec].dom.extent.value) % rf.lanes == 0
    if whole and inner.get(vec, 1) % rf.lanes:
        return False
    return registers_needed(op, inner, rf.lanes) <= rf.registers
