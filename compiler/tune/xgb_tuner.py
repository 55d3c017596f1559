"""The model-based tuner: XGBoost cost model + simulated annealing + diverse batch selection.

Each batch (AutoTVM's batch selection): simulated annealing on the model's scores collects the
top `diversity_ratio * b` unmeasured candidates; a greedy submodular pick fills the batch from them,
trading predicted quality against how many distinct knob values the batch covers, except that
each slot is a random config with probability eps (exploration; drawn per slot, so small
batches explore too, where AutoTVM's round(eps * b) random picks would be none). The model is
refit after every measured batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import TuningError
from .cost_model import XGBCostModel
from .database import Database
from .featurizer import Featurizer
from .host import host_row, with_host
from .record import MeasureInput, Record
from .sa import SimulatedAnnealingOptimizer
from .space import ConfigEntity
from .task import Task
from .transfer import MIN_RECORDS, global_model
from .tuner import Tuner


def submodular_pick(
    digits: np.ndarray, scores: np.ndarray, n: int, weight: float = 1.0
) -> np.ndarray:
    """Greedy maximization of sum(normalized score) + weight * (distinct knob values) / n_knobs.

    Returns row indices into `digits` in pick order. The objective is monotone submodular (a
    modular term plus a coverage term), so greedy is within 1 - 1/e of the optimum.
    """
    n_rows, n_knobs = digits.shape
    span = scores.max() - scores.min() if len(scores) else 0.0
    quality = (scores - scores.min()) / span if span > 0 else np.zeros(n_rows)
    covered = [np.zeros(d, dtype=bool) for d in digits.max(axis=0, initial=0) + 1]
    chosen: list[int] = []
    free = np.ones(n_rows, dtype=bool)
    for _ in range(min(n, n_rows)):
        new_values = sum((~covered[k][digits[:, k]]).astype(np.float64) for k in range(n_knobs))
        gain = np.where(free, quality + weight * new_values / max(n_knobs, 1), -np.inf)
        best = int(np.argmax(gain))
        chosen.append(best)
        free[best] = False
        for k in range(n_knobs):
            covered[k][digits[best, k]] = True
    return np.array(chosen, dtype=np.int64)


class XGBTuner(Tuner):
    """Model-based tuner; loss 'rank' (default) or 'reg', features 'program' or 'knob'."""

    def __init__(
        self,
        task: Task,
        loss: str = "rank",
        feature_type: str = "program",
        epsilon: float = 0.05,
        diversity_ratio: float = 2.0,
        diversity_weight: float = 1.0,
        sa_iters: int = 500,
        n_threads: int | None = None,
        seed: int = 0,
        featurizer: Featurizer | None = None,
    ):
        super().__init__(task, seed)
        if featurizer is not None and (
            featurizer.task is not task or featurizer.kind != feature_type
        ):
            raise TuningError(
                f"the featurizer given computes {featurizer.kind!r} features of "
                f"{featurizer.task.workload_key}, not {feature_type!r} ones of {task.workload_key}"
            )
        # features depend on the config alone, so tuners of one task may share the cache
        self.featurize = featurizer or Featurizer(task, feature_type)
        self.model = XGBCostModel(loss=loss, n_threads=n_threads, seed=seed)
        self.sa = SimulatedAnnealingOptimizer(self.space, n_iter=sa_iters, seed=seed)
        self.epsilon = epsilon
        self.diversity_ratio = diversity_ratio
        self.diversity_weight = diversity_weight
        self._indices: list[int] = []
        self._hosts: list[np.ndarray] = []  # the host columns of each measured config

    def transfer_from(self, database: Database, min_records: int = MIN_RECORDS) -> bool:
        """Train the global model on other workloads' records; True if there was enough."""
        model = global_model(
            database, self.task, self.featurize.kind, self.model.loss, min_records=min_records
        )
        self.model.global_model = model
        return model is not None

    def rows(self, indices: np.ndarray) -> np.ndarray:
        """The cost model's rows of configs measured here: features and host columns."""
        return with_host(self.featurize(indices), self.host_row())

    def _score(self, indices: np.ndarray) -> np.ndarray:
        return self.model.predict(self.rows(indices))

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        if not self.model.fitted:
            picks = self.space.sample(self.rng, batch_size, exclude=self.visited)
            return [self.space.get(int(i)) for i in picks]
        n_random = int(self.rng.binomial(batch_size, self.epsilon))
        n_model = batch_size - n_random
        pool = self.sa.find_maximums(
            self._score, max(int(self.diversity_ratio * n_model), 1), self.visited
        )
        picks = (
            pool[
                submodular_pick(
                    self.space.digits(pool), self._score(pool), n_model, self.diversity_weight
                )
            ]
            if len(pool)
            else pool
        )
        chosen = set(picks.tolist())
        extra = self.space.sample(self.rng, batch_size - len(chosen), exclude=self.visited | chosen)
        return [self.space.get(int(i)) for i in [*picks.tolist(), *extra.tolist()]]

    def update(self, inputs: Sequence[MeasureInput], results: Sequence[Record]) -> None:
        super().update(inputs, results)
        self._indices.extend(inp.config.index for inp in inputs)
        self._hosts.extend(host_row(r.host, r.threads) for r in results)
        x = with_host(self.featurize(np.array(self._indices)), np.stack(self._hosts))
        self.model.fit(x, np.array(self.history.throughputs))
