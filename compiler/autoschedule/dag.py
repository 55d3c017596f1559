"""Static analysis of a compute DAG's stages: the predicates the sketch rules test.

All of them read a stage's operation (its axes, reduction axes and the loads in its body), as
parsed from the compute definition: no schedule decision is needed to evaluate them.
"""

from __future__ import annotations

import math

from ..schedule.schedule import Schedule, Stage
from ..tir import expr as E
from ..tir.functor import collect, free_vars

# below this many output points a reduction has "little parallelism" (rfactor rule)
SMALL_SPACE = 256
ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max, E.FloorDiv, E.FloorMod, E.Call, E.Select)


def space_extent(st: Stage) -> int:
    return math.prod(int(iv.dom.extent.value) for iv in st.op.axis)


def reduce_extent(st: Stage) -> int:
    return math.prod(int(iv.dom.extent.value) for iv in st.op.reduce_axis)


def loads(st: Stage) -> list[E.ProducerLoad]:
    return collect(st.op.body, lambda n: isinstance(n, E.ProducerLoad))


CHEAP_CALLS = ("tir.if_then_else", "fabs")


PACKED = "layout_packed"  # the tag of a packed copy of an input (layout.py)


def is_inlinable(st: Stage) -> bool:
    """A stage without reduction that is not an output nor a packed copy (inlined, a copy is
    undone): it can be inlined."""
    return not st.op.reduce_axis and not st.is_output and st.op.tag != PACKED


def has_expensive_op(st: Stage) -> bool:
    """Does the body call a math function (exp, log, sqrt, ...)? Inlining such a stage into
    several consumers computes it several times."""
    calls = collect(st.op.body, lambda e: isinstance(e, E.Call))
    return any(c.op not in CHEAP_CALLS for c in calls)


def has_condition(st: Stage) -> bool:
    """Does the body choose by a condition (padding's if_then_else, a select)? Inlined into a
    reduction, the condition is evaluated at every step of its innermost loop."""
    calls = collect(st.op.body, lambda e: isinstance(e, E.Call) and e.op == "tir.if_then_else")
    return bool(calls) or bool(collect(st.op.body, lambda e: isinstance(e, E.Select)))


def is_strict_inlinable(st: Stage, gpu: bool = False) -> bool:
    """An inlinable stage with no expensive operation and no condition (bias, relu, ...):
    inlining it into its consumers costs nothing but index arithmetic, so it always is. On a
    GPU a condition is inlined too: the tiled stage's inputs are fetched into shared memory,
    so padding's condition runs once per fetched element, not at every multiply-add."""
    if not is_inlinable(st) or has_expensive_op(st):
        return False
    return gpu or not has_condition(st)


def has_data_reuse(st: Stage) -> bool:
    """A reduction where some input is read independently of a space axis of extent > 1 (so
    each element it reads is reused across that axis: matmul, conv2d), i.e. one worth
    multi-level tiling."""
    if not st.op.reduce_axis:
        return False
    space = {iv.var for iv in st.op.axis if int(iv.dom.extent.value) > 1}
    reduce_vars = {iv.var for iv in st.op.reduce_axis}
    for load in loads(st):
        used = set().union(*(free_vars(i) for i in load.indices)) if load.indices else set()
        if used & reduce_vars and space - used:
            return True
    return False


def has_more_reduction_parallel(st: Stage) -> bool:
    """Little parallelism in the space axes, plenty in the reduction (a row norm, a matmul
    with a tiny output): the rfactor rule's condition."""
    if not st.op.reduce_axis or len(st.op.body.axis) != 1:
        return False
    return space_extent(st) <= SMALL_SPACE and reduce_extent(st) >= 4 * space_extent(st)


def consumers(s: Schedule, st: Stage) -> list[Stage]:
    return [c for c in s.stages if c is not st and st in s.reads(c)]


def fusible_consumer(s: Schedule, st: Stage) -> Stage | None:
    """The single consumer that reads this stage elementwise (at its own space indices) and
    is computed at root without a reduction, if there is one."""
    cons = consumers(s, st)
    if len(cons) != 1:
        return None
    c = cons[0]
    if c.op.reduce_axis or c.attach_type != "root" or len(c.op.axis) != len(st.op.axis):
        return None
    own = [iv.var for iv in c.op.axis]
    for load in loads(c):
        if load.producer.op is not st.op:
            continue
        if not all(isinstance(i, E.Var) and i is v for i, v in zip(load.indices, own, strict=True)):
            return None
    return c


def op_count(body: E.Expr) -> int:
    """Arithmetic operations on values per output point (a reduction's combine counts once;
    the index arithmetic of loads, such as a conv's y + ry, is not counted)."""

    def arith(e: E.Expr) -> int:
        return len(collect(e, lambda n: isinstance(n, ARITH)))

    in_indices = sum(arith(i) for load in collect(body, lambda n: isinstance(n, E.ProducerLoad))
                     for i in load.indices)  # fmt: skip
    return arith(body) - in_indices + (1 if isinstance(body, E.Reduce) else 0)


def flop(s: Schedule) -> float:
    """Arithmetic operations of the whole DAG (every stage, every point)."""
    return float(
        sum(
            space_extent(st) * max(reduce_extent(st), 1) * max(op_count(st.op.body), 1)
            for st in s.stages
        )
    )
