"""Program features of a config, computed from its loop nest (AutoTVM's itervar + curve).

A LoopNest is the loop path down to a program's main statement: each loop's extent and
annotation, and for every buffer touched, the coefficient (stride) of each loop variable in the
buffer's flattened index. From it come
  * loop-context features, per loop: log2 extent, annotation one-hot, log2 top-down and
    bottom-up extent products, and per buffer log2 touch count, log2 reuse and log2 stride;
  * context-relation ("curve") features: R_t(i|j) = max over loops with Z_j < t of Z_i, sampled
    at log2-spaced thresholds t, for (reuse|count), (count|reuse), (topdown|count) and
    (count|topdown) per buffer -- invariant to the loop count, so they transfer across shapes.
Every vector has the same length (loops and buffers are padded). Nests with the same structure
are stacked and featurized together with numpy, so thousands of configs take milliseconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vta.errors import TuningError

from .space import ANNOTATIONS
from .task import Task

MAX_LOOPS = 24
MAX_BUFFERS = 4
CURVE_SAMPLES = 20
PER_LOOP = 1 + len(ANNOTATIONS) + 2 + 3 * MAX_BUFFERS
PROGRAM_FEATURE_LENGTH = MAX_LOOPS * PER_LOOP + MAX_BUFFERS * 4 * CURVE_SAMPLES


@dataclass(frozen=True)
class Loop:
    name: str
    extent: int
    annotation: str = "none"


@dataclass
class LoopNest:
    """Loops outermost first and, per buffer, each loop variable's stride in its flat index."""

    loops: list[Loop]
    strides: dict[str, Sequence[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, s in self.strides.items():
            if len(s) != len(self.loops):
                raise TuningError(
                    f"buffer {name!r} has {len(s)} strides for {len(self.loops)} loops"
                )

    @property
    def signature(self) -> tuple:
        return len(self.loops), tuple(sorted(self.strides))


def to_loop_nest(instance: Any) -> LoopNest:
    """The loop nest of what a template returned (a LoopNest today; lowered tir later)."""
    if isinstance(instance, LoopNest):
        return instance
    raise TuningError(
        f"cannot take program features of {type(instance).__name__}; this "
        "template yields no LoopNest, so tune it with feature_type='knob'"
    )


def program_features(nests: Sequence[LoopNest]) -> np.ndarray:
    """(len(nests), PROGRAM_FEATURE_LENGTH) float32; nests of one structure share one pass."""
    out = np.zeros((len(nests), PROGRAM_FEATURE_LENGTH), dtype=np.float32)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, nest in enumerate(nests):
        groups[nest.signature].append(i)
    for (n_loops, buffers), rows in groups.items():
        if n_loops > MAX_LOOPS or len(buffers) > MAX_BUFFERS:
            raise TuningError(
                f"loop nest has {n_loops} loops and {len(buffers)} buffers; "
                f"features hold at most {MAX_LOOPS} and {MAX_BUFFERS}"
            )
        ext = np.array([[lp.extent for lp in nests[r].loops] for r in rows], dtype=np.float64)
        ann = np.array(
            [[ANNOTATIONS.index(lp.annotation) for lp in nests[r].loops] for r in rows],
            dtype=np.int64,
        ).reshape(len(rows), n_loops)
        strides = np.array(
            [[nests[r].strides[b] for b in buffers] for r in rows], dtype=np.float64
        ).reshape(len(rows), len(buffers), n_loops)
        out[rows] = _features(ext.reshape(len(rows), n_loops), ann, strides)
    return out


def _suffix_sum(x: np.ndarray) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(x, axis=-1), axis=-1), axis=-1)


def _features(ext: np.ndarray, ann: np.ndarray, strides: np.ndarray) -> np.ndarray:
    n, n_loops = ext.shape
    n_buf = strides.shape[1]
    log_ext = np.log2(np.maximum(ext, 1))
    topdown = np.cumsum(log_ext, axis=1)
    bottomup = _suffix_sum(log_ext)
    touches = strides != 0  # (n, B, L)
    count = _suffix_sum(log_ext[:, None, :] * touches)  # log2 distinct elements under the loop
    reuse = bottomup[:, None, :] - count  # log2 of the iterations that revisit them
    log_stride = np.log2(np.abs(strides) + 1)

    per_loop = np.zeros((n, MAX_LOOPS, PER_LOOP), dtype=np.float32)
    per_loop[:, :n_loops, 0] = log_ext
    per_loop[:, :n_loops, 1 : 1 + len(ANNOTATIONS)] = np.eye(len(ANNOTATIONS))[ann]
    col = 1 + len(ANNOTATIONS)
    per_loop[:, :n_loops, col] = topdown
    per_loop[:, :n_loops, col + 1] = bottomup
    for b in range(n_buf):
        base = col + 2 + 3 * b
        per_loop[:, :n_loops, base] = count[:, b]
        per_loop[:, :n_loops, base + 1] = reuse[:, b]
        per_loop[:, :n_loops, base + 2] = log_stride[:, b]

    thresholds = np.arange(1, CURVE_SAMPLES + 1, dtype=np.float64)
    curve = np.zeros((n, MAX_BUFFERS, 4, CURVE_SAMPLES), dtype=np.float32)
    td = np.broadcast_to(topdown[:, None, :], count.shape)
    for r, (zi, zj) in enumerate(((reuse, count), (count, reuse), (td, count), (count, td))):
        below = zj[..., None] < thresholds  # (n, B, L, T)
        curve[:, :n_buf, r] = np.where(below, zi[..., None], 0.0).max(axis=2)
    return np.concatenate([per_loop.reshape(n, -1), curve.reshape(n, -1)], axis=1)


class Featurizer:
    """Feature rows of a task's configs, by kind ('program' or 'knob'), cached per index."""

    MAX_CACHE = 100_000

    def __init__(self, task: Task, kind: str = "program"):
        if kind not in ("program", "knob"):
            raise TuningError(f"feature kind {kind!r} is not 'program' or 'knob'")
        self.task = task
        self.kind = kind
        self._cache: dict[int, np.ndarray] = {}

    @property
    def length(self) -> int:
        if self.kind == "program":
            return PROGRAM_FEATURE_LENGTH
        return sum(k.features.shape[1] for k in self.task.config_space.knobs.values())

    def __call__(self, indices: np.ndarray) -> np.ndarray:
        indices = np.asarray(indices, dtype=np.int64)
        space = self.task.config_space
        if self.kind == "knob":
            return space.knob_features(space.digits(indices))
        missing = [int(i) for i in dict.fromkeys(indices.tolist()) if i not in self._cache]
        if missing:
            if len(self._cache) + len(missing) > self.MAX_CACHE:
                self._cache.clear()
            nests, ok = [], []
            for i, entity in zip(missing, space.entities(np.array(missing)), strict=True):
                try:
                    instance = self.task.instantiate(entity)
                except Exception:  # noqa: BLE001 - an invalid config featurizes as zeros
                    self._cache[i] = np.zeros(PROGRAM_FEATURE_LENGTH, np.float32)
                    continue
                nests.append(to_loop_nest(instance))
                ok.append(i)
            for i, row in zip(ok, program_features(nests), strict=True):
                self._cache[i] = row
        if not indices.size:
            return np.zeros((0, PROGRAM_FEATURE_LENGTH), np.float32)
        return np.stack([self._cache[i] for i in indices.tolist()])
