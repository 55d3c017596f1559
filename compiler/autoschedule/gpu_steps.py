"""Transformation steps of GPU programs: thread binding (also to the accelerator's virtual
threads), cache reads into shared memory, the storage scope of a stage computed inside a
thread's loops, and the split that follows the thread count of a tiled stage (cooperative
fetching). Registered with `steps.register_step`, so they replay, print and serialize like
the CPU's steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ..errors import TuningError
from ..schedule.schedule import Schedule
from ..te.tensor import thread_axis
from .steps import Split, Step, _leaf, register_step, split_loop, stage_named

THREAD_TAGS = ("blockIdx.x", "vthread", "threadIdx.x", "cthread")  # cthread: the accelerator's


@register_step
@dataclass(frozen=True)
class Bind(Step):
    """Bind loop #iter to a thread axis (blockIdx.x, vthread or threadIdx.x on a GPU; cthread,
    a virtual thread of the accelerator)."""

    KIND: ClassVar[str] = "BI"
    iter: int
    thread: str

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        if self.thread not in THREAD_TAGS:
            raise TuningError(f"unknown thread axis {self.thread!r}; valid: {THREAD_TAGS}")
        st = stage_named(s, self.stage)
        iv = _leaf(st, self.iter)
        st.bind(iv, thread_axis(self.thread))
        return f"{self.stage}: bind {iv.name} -> {self.thread}"


@register_step
@dataclass(frozen=True)
class CacheRead(Step):
    """Copy tensor `stage` (a placeholder or a stage's output) into `scope` for `readers`
    (new stage NAME.SCOPE, placed before the first reader)."""

    KIND: ClassVar[str] = "CHR"
    scope: str
    readers: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "readers", tuple(self.readers))

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        readers = [stage_named(s, r) for r in self.readers]
        found = [t for t in readers[0].op.input_tensors if t.name == self.stage]
        if not found:
            raise TuningError(f"cache_read: stage '{self.readers[0]}' reads no '{self.stage}'")
        s.cache_read(found[0], self.scope, [r.op for r in readers])
        return (
            f"{self.stage}.{self.scope} = cache_read({self.stage}, {self.scope}, "
            f"[{', '.join(self.readers)}])"
        )


@register_step
@dataclass(frozen=True)
class SetScope(Step):
    """The memory scope of a stage's buffer (`local` for a stage computed per thread)."""

    KIND: ClassVar[str] = "SS"
    scope: str

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        stage_named(s, self.stage).set_scope(self.scope)
        return f"set_scope({self.stage}, {self.scope})"


@register_step
@dataclass(frozen=True)
class FollowFusedSplit(Step):
    """Split loop #iter in two, the inner of length = the product of entry `level` of the
    lengths of Split steps `srcs` (the threads of a tiled stage's block, so a cooperative
    fetch spreads over exactly those threads whatever tile sizes the annotation picks)."""

    KIND: ClassVar[str] = "FFSP"
    iter: int
    srcs: tuple[int, ...]
    level: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "srcs", tuple(self.srcs))

    def length(self, steps: list[Step]) -> int:
        lens = []
        for k in self.srcs:
            src = steps[k] if 0 <= k < len(steps) else None
            if not isinstance(src, Split) or not 0 <= self.level < len(src.lengths):
                raise TuningError(f"follow-fused-split of {self.stage} refers to step {k}: {src}")
            lens.append(src.lengths[self.level] or 1)
        return math.prod(lens)

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        n = self.length(steps)
        return split_loop(stage_named(s, self.stage), self.iter, [n], (n,))
