"""Feature rows of a task's configs for the cost model: program features (`features`) of the
loop nest a template returns or the compiler lowers (`tir_features`), or knob features.
"""

from __future__ import annotations

import numpy as np

from ..errors import TuningError
from .features import PROGRAM_FEATURE_LENGTH, LoopNest, nest_features, program_features
from .task import Task
from .tir_features import StructureCache, loop_nest, lower_each, lower_for_features


class Featurizer:
    """Feature rows of a task's configs, by kind ('program' or 'knob'), cached per index.

    Program features come from the loop nest a template returns, or from its (schedule, args)
    lowered by the compiler; a StructureCache lowers only a few probes per loop structure.
    """

    MAX_CACHE = 100_000

    def __init__(self, task: Task, kind: str = "program", seed: int = 0):
        if kind not in ("program", "knob"):
            raise TuningError(f"feature kind {kind!r} is not 'program' or 'knob'")
        self.task = task
        self.kind = kind
        self._cache: dict[int, np.ndarray] = {}
        self._structures: StructureCache | None = None
        self._seed = seed

    @property
    def length(self) -> int:
        if self.kind == "program":
            return PROGRAM_FEATURE_LENGTH
        return sum(k.features.shape[1] for k in self.task.config_space.knobs.values())

    def loop_nest(self, index: int) -> LoopNest:
        """The loop nest of one config (raises if the template rejects it)."""
        instance = self.task.instantiate(index)
        if isinstance(instance, LoopNest):
            return instance
        if isinstance(instance, tuple) and len(instance) == 2:
            return loop_nest(lower_for_features(*instance))
        raise TuningError(
            f"cannot take program features of {type(instance).__name__}; this template "
            "yields neither a LoopNest nor (schedule, args), so tune it with feature_type='knob'"
        )

    def _lowered_rows(self, indices: np.ndarray) -> np.ndarray:
        rows = np.zeros((len(indices), PROGRAM_FEATURE_LENGTH), np.float32)
        ok, nests = lower_each(self.loop_nest, indices.tolist())  # invalid configs: zeros
        if ok:
            rows[ok] = program_features(nests)
        return rows

    def _program_rows(self, indices: np.ndarray) -> np.ndarray:
        space = self.task.config_space
        if self._structures is None:
            self._structures = StructureCache(space, self.loop_nest, seed=self._seed)
        rows = np.zeros((len(indices), PROGRAM_FEATURE_LENGTH), np.float32)
        for sel, arrays in self._structures.arrays(space.digits(indices)):
            if arrays is None:
                rows[sel] = self._lowered_rows(indices[sel])
            else:
                rows[sel] = nest_features(*arrays)
        return rows

    def clear(self) -> None:
        """Forget the cached rows (the loop structures learned so far are kept)."""
        self._cache.clear()

    def __call__(self, indices: np.ndarray) -> np.ndarray:
        indices = np.asarray(indices, dtype=np.int64)
        space = self.task.config_space
        if self.kind == "knob":
            return space.knob_features(space.digits(indices))
        missing = np.array(
            [i for i in dict.fromkeys(indices.tolist()) if i not in self._cache], dtype=np.int64
        )
        if missing.size:
            if len(self._cache) + missing.size > self.MAX_CACHE:
                self._cache.clear()
            self._cache.update(zip(missing.tolist(), self._program_rows(missing), strict=True))
        if not indices.size:
            return np.zeros((0, PROGRAM_FEATURE_LENGTH), np.float32)
        return np.stack([self._cache[i] for i in indices.tolist()])
