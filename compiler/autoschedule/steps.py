"""Transformation steps: a program is its compute definition plus a list of these.

Each step names its stage by operation name and its loops by position among the stage's
current leaf loops (negative: from the innermost), so a step list replays deterministically
onto a fresh `compiler.schedule` Schedule, prints with the loops' names, and serializes to
JSON. A split's lengths are its inner tile sizes; `None` marks a length a sketch leaves to the
annotation (replayed as 1).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ScheduleError, TuningError
from ..schedule.schedule import Schedule, Stage
from ..te.tensor import IterVar

UNROLL_KEY = "auto_unroll_max_step"


def stage_named(s: Schedule, name: str) -> Stage:
    for st in s.stages:
        if st.op.name == name:
            return st
    raise ScheduleError(f"no stage named {name!r} (stages: {[st.op.name for st in s.stages]})")


def _leaf(st: Stage, pos: int) -> IterVar:
    leaves = st.leaf_iter_vars
    if not -len(leaves) <= pos < len(leaves):
        raise ScheduleError(f"stage '{st.op.name}' has {len(leaves)} loops, no loop #{pos}")
    return leaves[pos]


def _names(ivs: list[IterVar]) -> str:
    return ", ".join(iv.name for iv in ivs)


@dataclass(frozen=True)
class Step:
    """One transformation of one stage; `apply` performs it and returns a readable line."""

    KIND: ClassVar[str] = ""
    stage: str

    def apply(self, s: Schedule, steps: list[Step]) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_json(self) -> list:
        return [self.KIND, *(_plain(getattr(self, f.name)) for f in dataclasses.fields(self))]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class CacheWrite(Step):
    """Compute the stage into a `local` buffer (stage `NAME.local`); the stage copies it out."""

    KIND: ClassVar[str] = "CW"

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        s.cache_write(st.op.output(0), "local")
        return f"{self.stage}.local = cache_write({self.stage}, local)"


@dataclass(frozen=True)
class Inline(Step):
    KIND: ClassVar[str] = "CI"

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        stage_named(s, self.stage).compute_inline()
        return f"compute_inline({self.stage})"


@dataclass(frozen=True)
class Split(Step):
    """Split loop #iter into len(lengths) + 1 loops; lengths are the inner extents."""

    KIND: ClassVar[str] = "SP"
    iter: int
    lengths: tuple[int | None, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "lengths", tuple(self.lengths))

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        return split_loop(st, self.iter, [n or 1 for n in self.lengths], self.lengths)


def split_loop(st: Stage, pos: int, lengths: list[int], shown: tuple) -> str:
    """Split a leaf loop into parts named NAME.0 (outermost) .. NAME.n."""
    iv = _leaf(st, pos)
    base, parts, outer = iv.name, [], iv
    for n in reversed(lengths):
        outer, inner = st.split(outer, factor=max(int(n), 1))
        parts.insert(0, inner)
    parts.insert(0, outer)
    for k, part in enumerate(parts):
        part.var.name = f"{base}.{k}"
    text = ", ".join("?" if n is None else str(n) for n in shown)
    return f"{st.op.name}: split {base} -> {_names(parts)} by [{text}]"


@dataclass(frozen=True)
class FollowSplit(Step):
    """Split loop #iter into n_parts loops whose inner lengths follow Split step #src:
    its first n_parts - 2 lengths, then the product of the rest (a consumer tiled like its
    producer's outer levels)."""

    KIND: ClassVar[str] = "FSP"
    iter: int
    src: int
    n_parts: int

    def lengths(self, steps: list[Step]) -> list[int | None]:
        src = steps[self.src]
        if not isinstance(src, Split):
            raise TuningError(f"follow-split of {self.stage} refers to step {self.src}: {src}")
        lens = list(src.lengths)
        head = lens[: self.n_parts - 2]
        tail = lens[self.n_parts - 2 :]
        rest = None if None in tail else math.prod(tail)
        return [*head, rest]

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        lens = self.lengths(steps)
        return split_loop(stage_named(s, self.stage), self.iter, [n or 1 for n in lens], lens)


@dataclass(frozen=True)
class Reorder(Step):
    KIND: ClassVar[str] = "RE"
    order: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", tuple(self.order))

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        ivs = [_leaf(st, p) for p in self.order]
        st.reorder(*ivs)
        return f"{self.stage}: reorder {_names(ivs)}"


@dataclass(frozen=True)
class Fuse(Step):
    """Fuse the consecutive loops #first .. #first + count - 1."""

    KIND: ClassVar[str] = "FU"
    first: int
    count: int

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        ivs = [_leaf(st, self.first + k) for k in range(self.count)]
        fused = st.fuse(*ivs) if len(ivs) > 1 else ivs[0]
        return f"{self.stage}: fuse {_names(ivs)} -> {fused.name}"


ANNOTATIONS = ("parallel", "vectorize", "unroll")


@dataclass(frozen=True)
class Annotate(Step):
    KIND: ClassVar[str] = "AN"
    iter: int
    kind: str

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        if self.kind not in ANNOTATIONS:
            raise TuningError(f"unknown loop annotation {self.kind!r}; valid: {ANNOTATIONS}")
        iv = _leaf(st, self.iter)
        getattr(st, self.kind)(iv)
        return f"{self.stage}: {self.kind} {iv.name}"


@dataclass(frozen=True)
class Pragma(Step):
    """`auto_unroll_max_step` N: unroll the innermost loops below loop #iter while the
    statements their bodies expand to stay at most N: the product of the unrolled and
    vectorized loops' extents, where a stage computed at one of those loops adds its own
    unrolled and vectorized extents' product to that loop's body (the vectorized loop stays
    vectorized)."""

    KIND: ClassVar[str] = "PR"
    iter: int
    key: str
    value: int

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        if self.key != UNROLL_KEY:
            raise TuningError(f"unknown pragma {self.key!r}; valid: {UNROLL_KEY}")
        leaves = st.leaf_iter_vars
        start = leaves.index(_leaf(st, self.iter))
        body, unrolled = 1, []
        extents = loop_extents(st)
        for iv in reversed(leaves[start:]):
            body += sum(
                _expanded_size(a)
                for a in s.stages
                if a.attach_type == "scope" and a.attach_stage is st and a.attach_ivar is iv
            )
            kind = st.iter_attrs[iv].kind if iv in st.iter_attrs else "serial"
            if kind == "vectorized":
                body *= max(extents[iv], 1)
                continue
            if kind != "serial" or extents[iv] * body > self.value:
                break
            body *= max(extents[iv], 1)
            st.unroll(iv)
            unrolled.append(iv)
        return f"{self.stage}: {self.key}={self.value} at {_leaf(st, self.iter).name} " + (
            f"(unrolls {_names(unrolled[::-1])})" if unrolled else "(unrolls nothing)"
        )


def _expanded_size(st: Stage) -> int:
    """How many copies of its statement a stage's loop nest expands to where it stands: the
    product of its unrolled and vectorized loops' extents (a rolled loop stays one loop)."""
    extents, size = loop_extents(st), 1
    for iv in st.leaf_iter_vars:
        attr = st.iter_attrs.get(iv)
        if attr is not None and attr.kind in ("unrolled", "vectorized"):
            size *= max(extents[iv], 1)
    return size


@dataclass(frozen=True)
class ComputeAt(Step):
    KIND: ClassVar[str] = "CA"
    target: str
    target_iter: int

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st, parent = stage_named(s, self.stage), stage_named(s, self.target)
        iv = _leaf(parent, self.target_iter)
        st.compute_at(parent, iv)
        return f"compute_at({self.stage}, {self.target}.{iv.name})"


@dataclass(frozen=True)
class ComputeRoot(Step):
    KIND: ClassVar[str] = "CR"

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        stage_named(s, self.stage).compute_root()
        return f"compute_root({self.stage})"


STEP_KINDS: dict[str, type[Step]] = {
    cls.KIND: cls
    for cls in (CacheWrite, Inline, Split, FollowSplit, Reorder, Fuse, Annotate, Pragma)
    + (ComputeAt, ComputeRoot)
}


def register_step(cls: type[Step]) -> type[Step]:
    """Add a step kind (its KIND must be new) so step lists holding it serialize."""
    if cls.KIND in STEP_KINDS and STEP_KINDS[cls.KIND] is not cls:
        raise TuningError(f"step kind {cls.KIND!r} is already registered")
    STEP_KINDS[cls.KIND] = cls
    return cls


def step_from_json(data: list) -> Step:
    if not isinstance(data, list) or not data or data[0] not in STEP_KINDS:
        raise TuningError(f"not a transformation step: {data!r}")
    cls = STEP_KINDS[data[0]]
    fields = dataclasses.fields(cls)
    if len(data) - 1 != len(fields):
        raise TuningError(f"step {data[0]} takes {len(fields)} values, got {data[1:]}")
    values = [tuple(v) if isinstance(v, list) else v for v in data[1:]]
    return cls(*values)


def loop_extents(st: Stage) -> dict[IterVar, int]:
    """Extent of every loop of a stage (root axes' extents through its splits and fuses)."""
    from ..schedule.schedule import Fuse as FuseRel
    from ..schedule.schedule import split_extent

    ext: dict[IterVar, int] = {}
    for iv in [*st.op.axis, *st.op.reduce_axis]:
        ext[iv] = int(iv.dom.extent.value)
    for rel in st.relations:
        if isinstance(rel, FuseRel):
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
        else:
            ext[rel.outer], ext[rel.inner] = split_extent(ext[rel.parent], rel)
    return ext


def replay(s: Schedule, steps: list[Step]) -> list[str]:
    """Apply every step to `s` in order; the lines describing them."""
    return [step.apply(s, steps) for step in steps]
