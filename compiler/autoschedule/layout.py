"""Layout rewrite of an input read by a multi-level tiled stage: its rows packed into panels.

A tiled matmul C[i, j] = sum_k A[i, k] * B[k, j] reads B along its rows: every step of the
reduction loops around the register tile loads the tile's columns of the next row, a whole
row of B further on. With rows longer than any register tile, each of those loads touches a
new cache line (and, for a power-of-two row length, the same cache sets). Packing B into
panels as wide as the register tile,

    B.packed[jo, k, ji] = B[k, jo * bn + ji]        C reads B.packed[j // bn, k, j % bn]

makes the tile's walk over the reduction one contiguous stream, as the template tuner's
matmul (`topi.x86.matmul_pack`) reads its packed B. The packed copy is a stage of the program
(computed and timed in the kernel, as the template's is), computed at root: inside the
output's loops it would be packed again at every iteration of the axes it does not depend on.
An input read at least MIN_REUSE times over is always packed (the copy costs at most 1/64 of
the reads); one read fewer times is packed in one sketch and left in another.

`Pack(tensor, reader, src)` takes bn from the innermost length of Split step #src (the
register tile's columns), so tile-size mutations move the panel width with the tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from .. import te
from ..errors import ScheduleError, TuningError
from ..schedule.schedule import Schedule, Stage
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from ..tir import expr as E
from ..tir.functor import Mutator, free_vars
from . import dag
from . import register_tile as rt
from .steps import Split, Step, register_step, stage_named

MIN_ROW = 64  # rows at most this long are covered by a register tile (annotate.MAX_INNERMOST)
MIN_REUSE = 64  # an input read this many times over is always packed (the copy costs <= 1/64)


def packable(st: Stage) -> list[tuple[Tensor, int]]:
    """Inputs of a tiled stage worth packing (their last dimension cut into panels), each with
    how many times the stage reads each of its elements (the extents of the space axes its
    loads do not use): a placeholder whose every load indexes its last dimension by the
    stage's vectorized axis alone, reads a reduction axis in another dimension, and has rows
    longer than MIN_ROW."""
    vec = rt.vector_axis(st.op)
    if vec is None or not st.op.reduce_axis:
        return []
    var = st.op.axis[vec].var
    reduce_vars = {iv.var for iv in st.op.reduce_axis}
    found: dict[int, tuple[Tensor, int]] = {}
    for load in dag.loads(st):
        t = load.producer
        if not isinstance(t.op, PlaceholderOp) or len(t.shape) < 2:
            continue
        used = set().union(*(free_vars(i) for i in load.indices))
        ok = load.indices[-1] is var and any(free_vars(i) & reduce_vars for i in load.indices[:-1])
        reuse = math.prod(int(iv.dom.extent.value) for iv in st.op.axis if iv.var not in used)
        prev = found.get(id(t), (t, reuse))[1]
        found[id(t)] = (t, min(prev, reuse) if ok and int(t.shape[-1]) > MIN_ROW else 0)
    return [(t, reuse) for t, reuse in found.values() if reuse]


class _PackLoads(Mutator):
    """Loads of `old` become loads of the packed copy (last index cut into panel, lane)."""

    def __init__(self, old: Tensor, new: Tensor, bn: int):
        self.old, self.new, self.bn = old, new, bn

    def visit_ProducerLoad(self, e: E.ProducerLoad) -> E.Expr:
        e = self.generic(e)
        if e.producer is not self.old:
            return e
        *rest, last = e.indices
        return E.ProducerLoad(self.new, (last // self.bn, *rest, last % self.bn))


def pack(s: Schedule, tensor: Tensor, reader: Stage, bn: int) -> Stage:
    """Give `reader` a packed copy of `tensor` ([last / bn, ..., bn]) to read; returns the
    copy's stage (inserted before the reader)."""
    *dims, row = (int(n) for n in tensor.shape)
    if bn < 1 or row % bn:
        raise ScheduleError(f"pack: panel width {bn} does not divide {tensor.name}'s rows ({row})")

    def f(*index):
        o, *mid, lane = index
        return tensor(*mid, o * bn + lane)

    packed = te.compute((row // bn, *dims, bn), f, name=f"{tensor.name}.packed", tag=dag.PACKED)
    op = reader.op
    body = _PackLoads(tensor, packed, bn).visit(op.body)
    new_op = ComputeOp(op.name, op.axis, body, op.tag, op.attrs)
    s.stage_map[new_op] = reader
    reader.op = new_op
    pst = Stage(packed.op, s)
    s.stage_map[packed.op] = pst
    s.stages.insert(s.stages.index(reader), pst)
    return pst


@register_step
@dataclass(frozen=True)
class Pack(Step):
    """Stage `reader` reads tensor `stage` packed into panels of the innermost length of
    Split step #src (open: 1)."""

    KIND: ClassVar[str] = "PK"
    reader: str
    src: int

    def panel(self, steps: list[Step]) -> int | None:
        src = steps[self.src] if 0 <= self.src < len(steps) else None
        if not isinstance(src, Split):
            raise TuningError(f"pack of {self.stage} refers to step {self.src}: {src}")
        return src.lengths[-1]

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        bn = self.panel(steps)
        reader = stage_named(s, self.reader)
        found = [t for t in reader.op.input_tensors if t.name == self.stage]
        if not found:
            raise TuningError(f"pack: stage '{self.reader}' reads no '{self.stage}'")
        pst = pack(s, found[0], reader, bn or 1)
        shown = "?" if bn is None else bn
        return f"{pst.op.name} = pack({self.stage}, panels of {shown}, for {self.reader})"


def pack_steps(st: Stage, base: int, split_of: dict[int, int]) -> tuple[list[Step], bool]:
    """Pack steps for every packable input of `st`, tiled by steps starting at #base whose
    split of axis `pos` is step #base + split_of[pos], and whether packing is the only
    choice (every packed input is read at least MIN_REUSE times over)."""
    vec = rt.vector_axis(st.op)
    found = packable(st) if vec in split_of else []
    steps: list[Step] = [Pack(t.name, st.op.name, base + split_of[vec]) for t, _ in found]
    return steps, bool(found) and min(reuse for _, reuse in found) >= MIN_REUSE
