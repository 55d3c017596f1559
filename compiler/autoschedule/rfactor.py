"""rfactor: turn part of a reduction into a space axis, for reductions with little parallelism.

`X[i] = reduce_k f(i, k)` with k of extent K becomes, for a factor F dividing K,
    X.rf[i, kin] = reduce_ko f(i, ko * F + kin)      (kin < F: a space axis to parallelize or
    X[i]         = reduce_kin X.rf[i, kin]            vectorize)
as a rewrite of the schedule's stages (like cache_write, before any other step on the stage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import ScheduleError
from ..schedule.schedule import Schedule, Stage
from ..te.tensor import ComputeOp, IterVar, Range
from ..tir import expr as E
from ..tir.functor import substitute
from .steps import Step, register_step, stage_named


def rfactor(s: Schedule, st: Stage, factor: int) -> Stage:
    """Factor the single reduction axis of `st` by `factor`; returns the new X.rf stage."""
    op = st.op
    body = op.body
    if not isinstance(body, E.Reduce) or len(body.axis) != 1:
        raise ScheduleError(f"rfactor: stage '{op.name}' is not a reduction over one axis")
    if st.relations or st.attach_type != "root" or st.iter_attrs:
        raise ScheduleError(f"rfactor: stage '{op.name}' is already scheduled")
    (k,) = body.axis
    extent = int(k.dom.extent.value)
    if factor < 1 or extent % factor:
        raise ScheduleError(f"rfactor: factor {factor} does not divide extent {extent} of {k.name}")
    axis = [IterVar(Range(0, iv.dom.extent), iv.name) for iv in op.axis]
    kin = IterVar(Range(0, factor), f"{k.name}.in")
    ko = IterVar(Range(0, extent // factor), f"{k.name}.o", "reduce")
    vmap = {a.var: b.var for a, b in zip(op.axis, axis, strict=True)}
    vmap[k.var] = ko.var * factor + kin.var
    source = substitute(body.source, vmap)
    cond = substitute(body.condition, vmap)
    rf = ComputeOp(f"{op.name}.rf", [*axis, kin], E.Reduce(body.combiner, source, (ko,), cond))
    kr = IterVar(Range(0, factor), f"{k.name}.in", "reduce")
    load = rf.output(0)(*[iv.var for iv in op.axis], kr.var)
    final = ComputeOp(
        op.name, op.axis, E.Reduce(body.combiner, load, (kr,), E.convert(True)), op.tag, op.attrs
    )
    rst = Stage(rf, s)
    s.stage_map[rf] = rst
    s.stage_map[final] = st
    st.op = final
    st.all_iter_vars = [*op.axis, kr]
    st.leaf_iter_vars = list(st.all_iter_vars)
    s.stages.insert(s.stages.index(st), rst)
    return rst


@register_step
@dataclass(frozen=True)
class Rfactor(Step):
    """rfactor(stage) by `factor` (None: open, for the annotation)."""

    KIND: ClassVar[str] = "RF"
    factor: int | None

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        rfactor(s, stage_named(s, self.stage), self.factor or 1)
        shown = "?" if self.factor is None else self.factor
        return f"{self.stage}.rf = rfactor({self.stage}, {shown})"
