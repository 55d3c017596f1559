"""Parallel simulated annealing over a ConfigSpace, guided by a cost model's scores.

All chains step at once: one random walk per chain (one knob moved) and one batched score call
per step. Chains persist across calls, so after the model is refit the search continues from
where it stood rather than from random points. Returns the best `num` unvisited configs seen.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .space import ConfigSpace


class SimulatedAnnealingOptimizer:
    """AutoTVM's defaults: 128 chains, 500 steps, temperature 1 -> 0, stop after 50 idle steps."""

    def __init__(
        self,
        space: ConfigSpace,
        n_iter: int = 500,
        temp: tuple[float, float] = (1, 0),
        parallel_size: int = 128,
        early_stop: int = 50,
        persistent: bool = True,
        seed: int = 0,
    ):
        self.space = space
        self.n_iter = n_iter
        self.temp = temp
        self.parallel_size = parallel_size
        self.early_stop = early_stop
        self.persistent = persistent
        self.rng = np.random.default_rng(seed)
        self.points: np.ndarray | None = None  # chain states as digit rows

    def find_maximums(
        self, score: Callable[[np.ndarray], np.ndarray], num: int, exclude: set[int]
    ) -> np.ndarray:
        """Indices of up to `num` best-scoring configs seen, excluding `exclude`, best first."""
        space = self.space
        if self.points is None or not self.persistent:
            self.points = space.digits(space.sample(self.rng, self.parallel_size))
        digits = self.points
        index = space.indices(digits)
        scores = score(index)
        excluded = np.fromiter(exclude, np.int64, len(exclude))
        top_idx, top_score = self._merge(
            np.zeros(0, np.int64), np.zeros(0), index, scores, excluded, num
        )
        temps = np.linspace(self.temp[0], self.temp[1], self.n_iter + 1)
        idle = 0
        for t in temps[: self.n_iter]:
            new_digits = space.random_walk(self.rng, digits)
            new_index = space.indices(new_digits)
            valid = space.valid_mask(new_index)
            new_scores = np.full(len(new_index), -np.inf)
            if valid.any():
                new_scores[valid] = score(new_index[valid])
            with np.errstate(invalid="ignore", over="ignore"):
                accept_p = np.exp(np.minimum((new_scores - scores) / (t + 1e-5), 1))
            accept = valid & (self.rng.random(len(accept_p)) < accept_p)
            digits = np.where(accept[:, None], new_digits, digits)
            scores = np.where(accept, new_scores, scores)
            merged = self._merge(
                top_idx, top_score, new_index[valid], new_scores[valid], excluded, num
            )
            idle = idle + 1 if np.array_equal(merged[0], top_idx) else 0
            top_idx, top_score = merged
            if idle >= self.early_stop:
                break
        self.points = digits
        return top_idx

    @staticmethod
    def _merge(
        top_idx: np.ndarray,
        top_score: np.ndarray,
        idx: np.ndarray,
        score: np.ndarray,
        excluded: np.ndarray,
        num: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        keep = ~np.isin(idx, excluded)
        idx = np.concatenate([top_idx, idx[keep]])
        score = np.concatenate([top_score, score[keep]])
        order = np.argsort(-score, kind="stable")
        idx, score = idx[order], score[order]
        _, first = np.unique(idx, return_index=True)
        first = np.sort(first)[:num]
        return idx[first], score[first]
