"""Bound inference: the range of every root axis and the extent of every loop of every stage.

Stages are visited consumers first. A stage at root covers its whole domain; a stage computed
at a loop covers the union of what its consumers read within one iteration of that loop: the
consumers' loop variables inside the attach point are relaxed to their ranges, the ones outside
stay symbolic, so the region's origin is an expression of the enclosing loops. Loops bound to
GPU threads are relaxed too where the stage's memory is visible to all of them: a `shared`
buffer holds what every thread (and virtual thread) of the block reads, a `global` one what
every block reads, a `local` one only its own thread's part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..arith import Analyzer, eval_interval
from ..errors import LoweringError, ScheduleError
from ..te.tensor import IterVar
from ..tir import expr as E
from ..tir.functor import Mutator, collect, free_vars, substitute
from .schedule import Fuse, Schedule, Split, Stage, split_extent


@dataclass
class StageInfo:
    """What lowering needs to know about one (non-inline) stage."""

    stage: Stage
    body: E.Expr  # the op body with inlined producers substituted
    root_min: dict[IterVar, E.Expr] = field(default_factory=dict)
    root_ext: dict[IterVar, int] = field(default_factory=dict)
    leaf_ext: dict[IterVar, int] = field(default_factory=dict)
    value: dict[IterVar, E.Expr] = field(default_factory=dict)  # 0-based, in leaf vars
    ancestors: list[E.Var] = field(default_factory=list)  # enclosing loop vars, outer first

    def root_value(self, iv: IterVar) -> E.Expr:
        """The absolute value of root axis `iv` in terms of the loop variables."""
        return self.root_min[iv] + self.value[iv]

    @property
    def spatial(self) -> list[IterVar]:
        return list(self.stage.op.axis)

    @property
    def roots(self) -> list[IterVar]:
        return list(self.stage.op.axis) + list(self.stage.op.reduce_axis)


class _Inline(Mutator):
    def __init__(self, s: Schedule, bodies: dict[Stage, E.Expr]):
        self.s, self.bodies = s, bodies

    def visit_ProducerLoad(self, e: E.ProducerLoad) -> E.Expr:
        e = self.generic(e)
        st = self.s.stage_of(e.producer)
        if st is None or st.attach_type != "inline":
            return e
        return substitute(
            self.bodies[st], {iv.var: i for iv, i in zip(st.op.axis, e.indices, strict=False)}
        )


def inline_bodies(s: Schedule) -> dict[Stage, E.Expr]:
    """Every stage's body with the bodies of inlined producers substituted in. Bodies never
    change, so each op keeps its result per choice of inlined ops (the tuner lowers many
    schedules of one definition)."""
    inlined = frozenset((op, st.op) for op, st in s.stage_map.items() if st.attach_type == "inline")
    bodies: dict[Stage, E.Expr] = {}
    for st in s.stages:
        cache = st.op.__dict__.setdefault("_inlined_bodies", {})
        if inlined not in cache:
            cache[inlined] = _Inline(s, bodies).visit(st.op.body)
        bodies[st] = cache[inlined]
    return bodies


def reads_of(body: E.Expr) -> list[E.ProducerLoad]:
    return collect(body, lambda n: isinstance(n, E.ProducerLoad))


def body_memo(stage: Stage, body: E.Expr, fn: Callable[[E.Expr], Any]) -> Any:
    """fn(body) for a stage's (inlined) body, kept on its op beside `inline_bodies`' results
    (they never change; the entry holds the body, so its id is not reused while cached)."""
    cache = stage.op.__dict__.setdefault("_body_memo", {})
    key = (fn, id(body))
    if key not in cache or cache[key][0] is not body:
        cache[key] = (body, fn(body))
    return cache[key][1]


def _leaf_structure(info: StageInfo, ana: Analyzer) -> None:
    """Leaf extents from root extents, and each axis's 0-based value in leaf variables."""
    st = info.stage
    ext = dict(info.root_ext)
    for rel in st.relations:
        if isinstance(rel, Split):
            ext[rel.outer], ext[rel.inner] = split_extent(ext[rel.parent], rel)
        else:
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
    value: dict[IterVar, E.Expr] = {iv: iv.var for iv in st.leaf_iter_vars}
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            value[rel.parent] = value[rel.outer] * ext[rel.inner] + value[rel.inner]
        elif isinstance(rel, Fuse):
            value[rel.outer] = E.FloorDiv(value[rel.fused], ext[rel.inner])
            value[rel.inner] = E.FloorMod(value[rel.fused], ext[rel.inner])
    for iv in st.leaf_iter_vars:
        ana.bind(iv.var, 0, ext[iv] - 1)
    info.leaf_ext = {iv: ext[iv] for iv in st.leaf_iter_vars}
    info.value = {iv: ana.simplify(value[iv]) for iv in info.roots}


# where a buffer of each scope lives, and which thread loops share it (rank <= scope rank)
SCOPE_RANK = {"global": 0, "shared": 1}  # every other scope (local, accelerator SRAM) is private


def thread_rank(tag: str) -> int | None:
    """0 for blockIdx.*, 1 for threadIdx.* and virtual threads, None for other loops."""
    if tag.startswith("blockIdx"):
        return 0
    if tag.startswith(("threadIdx", "vthread", "cthread")):
        return 1
    return None


def _shared_thread_vars(s: Schedule, scope: str) -> set[E.Var]:
    """Loop variables bound to threads that all see one buffer of `scope`."""
    rank = SCOPE_RANK.get(scope)
    if rank is None:
        return set()
    out = set()
    for st in s.stages:
        for iv, attr in st.iter_attrs.items():
            r = thread_rank(attr.thread.thread_tag) if attr.thread is not None else None
            if r is not None and rank <= r:
                out.add(iv.var)
    return out


def _attach_ancestors(info: StageInfo, infos: dict[Stage, StageInfo]) -> list[E.Var]:
    st = info.stage
    if st.attach_type != "scope":
        return []
    parent = infos[st.attach_stage]
    leaves = st.attach_stage.leaf_iter_vars
    upto = leaves[: leaves.index(st.attach_ivar) + 1]
    return parent.ancestors + [iv.var for iv in upto]


def infer_bounds(s: Schedule, ana: Analyzer) -> dict[Stage, StageInfo]:
    """StageInfo for every non-inline stage; binds all loop variables' ranges in `ana`."""
    bodies = inline_bodies(s)
    active = [st for st in s.stages if st.attach_type != "inline"]
    infos: dict[Stage, StageInfo] = {}
    loop_ext: dict[E.Var, int] = {}
    for st in reversed(active):
        info = StageInfo(st, bodies[st])
        info.ancestors = _attach_ancestors(info, infos)
        for iv in st.op.reduce_axis:
            _const_range(st, iv, info)
        if st.attach_type == "scope":
            _region_from_consumers(s, info, infos, active, loop_ext, ana)
        else:
            for iv in st.op.axis:
                _const_range(st, iv, info)
        _leaf_structure(info, ana)
        loop_ext.update({iv.var: n for iv, n in info.leaf_ext.items()})
        infos[st] = info
    return {st: infos[st] for st in active}


def _const_range(st: Stage, iv: IterVar, info: StageInfo) -> None:
    lo, ext = E.as_int(iv.dom.min), E.as_int(iv.dom.extent)
    if lo is None or ext is None:
        raise LoweringError(f"stage '{st.op.name}': axis '{iv.name}' needs a constant range")
    info.root_min[iv], info.root_ext[iv] = E.const(lo), ext


def _region_from_consumers(s, info, infos, active, loop_ext, ana) -> None:
    st = info.stage
    anc = set(info.ancestors)
    shared = _shared_thread_vars(s, st.scope)
    lows: list[list[E.Expr]] = [[] for _ in st.op.axis]
    highs: list[list[E.Expr]] = [[] for _ in st.op.axis]
    exact = True
    for d in active:
        if d not in infos:
            continue
        dinfo = infos[d]
        loads = [r for r in body_memo(d, dinfo.body, reads_of) if s.stage_of(r.producer) is st]
        if not loads:
            continue
        scope_vars = set(dinfo.ancestors) | {iv.var for iv in d.leaf_iter_vars}
        if not anc <= scope_vars:
            raise ScheduleError(
                f"compute_at: stage '{st.op.name}' is computed at "
                f"'{st.attach_stage.op.name}.{st.attach_ivar.name}' but stage '{d.op.name}' "
                "reads it outside that loop"
            )
        vmap = {iv.var: dinfo.root_value(iv) for iv in dinfo.roots}
        for load in loads:
            for k, idx in enumerate(load.indices):
                idx = ana.simplify(substitute(idx, vmap))
                relax = {
                    v: (E.const(0), E.const(loop_ext[v] - 1))
                    for v in free_vars(idx)
                    if v in loop_ext and (v not in anc or v in shared)
                }
                iv = eval_interval(idx, relax, ana)
                if iv is None:
                    exact = False
                    continue
                lows[k].append(iv[0])
                highs[k].append(iv[1])
    for k, axis in enumerate(st.op.axis):
        dom = axis.dom.extent.value
        if not exact or not lows[k]:
            info.root_min[axis], info.root_ext[axis] = E.const(0), dom
            continue
        lo, hi = lows[k][0], highs[k][0]
        for a, b in zip(lows[k][1:], highs[k][1:], strict=False):
            lo, hi = ana.simplify(E.Min(lo, a)), ana.simplify(E.Max(hi, b))
        ext = ana.simplify(hi - lo + 1)
        n = E.as_int(ext)
        if n is None:
            bound = ana.const_bound(ext)[1]
            n = dom if bound == float("inf") else int(bound)
        if n >= dom or n < 1:
            info.root_min[axis], info.root_ext[axis] = E.const(0), dom
        else:
            info.root_min[axis], info.root_ext[axis] = lo, n
