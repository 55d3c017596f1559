"""Evolutionary search on the learned cost model (the auto-scheduler's tuner).

Each batch: an initial population of fresh random annotations of every sketch plus the best
measured programs; a few generations of mutation (tile size, parallel granularity, unroll
pragma, compute location) and node-based crossover, parents drawn by predicted score; the best
predicted programs not measured yet form the batch, except a fraction `eps` of fresh random
ones (epsilon-greedy). The XGBoost ranker (`tune.cost_model`) is refitted on every measured
program's summed per-store features after each batch, each row ending with the host columns
of its record (`tune.host`: thread count, vector lanes, cache sizes). Tuners of several tasks
(a network's, under the task scheduler) may share one model (`SharedCostModel`): it is fitted
on every task's measurements, ranked within each task, so a task's first batches are already
guided by what the others measured. The loop itself (measurement, records database, resume,
callbacks) is the template tuner's (`tune.tuner.Tuner`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..errors import TuningError
from ..tune.cost_model import XGBCostModel
from ..tune.features import PROGRAM_FEATURE_LENGTH
from ..tune.host import HOST_FEATURES, host_row, with_host
from ..tune.record import MeasureInput, Record
from ..tune.task import target_kind
from ..tune.tuner import Tuner
from . import accel
from .annotate import annotate, crossover, mutate
from .features import featurize
from .program import Program, SearchTask
from .sketch import generate_sketches


class SharedCostModel:
    """One cost model fitted on the measurements of several tuners' tasks, each task's
    throughputs ranked within the task (`XGBCostModel.fit`'s groups)."""

    def __init__(self, seed: int = 0):
        self.model = XGBCostModel(loss="rank", seed=seed)
        self._data: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def fit(self, task: str, x: np.ndarray, throughput: np.ndarray) -> None:
        """Replace `task`'s rows by (x, throughput) and refit on every task's rows."""
        self._data[task] = (x, throughput)
        xs, ys = zip(*self._data.values(), strict=True)
        groups = np.repeat(np.arange(len(ys)), [len(y) for y in ys])
        self.model.fit(np.concatenate(xs), np.concatenate(ys), groups)


class AnsorTuner(Tuner):
    """Proposes programs of a SearchTask by evolutionary search on the cost model."""

    def __init__(
        self,
        task: SearchTask,
        seed: int = 0,
        population: int = 128,
        generations: int = 3,
        eps: float = 0.05,
        crossover_prob: float = 0.15,
        elites: int = 16,
        shared: SharedCostModel | None = None,
    ):
        super().__init__(task, seed)  # type: ignore[arg-type]
        self.sketches = generate_sketches(task)
        if not self.sketches:
            raise TuningError(f"no sketch for workload {task.workload_key}")
        self.shared = shared or SharedCostModel(seed)  # its own, unless given one
        self.model = self.shared.model
        self.population, self.generations = population, generations
        self.eps, self.crossover_prob, self.elites = eps, crossover_prob, elites
        self._rows: dict[str, np.ndarray | None] = {}  # features by program key (None: invalid)
        self.measured: list[tuple[Program, float]] = []
        self._hosts: list[np.ndarray] = []  # the host columns of each measured program
        self.search_seconds = 0.0  # time spent proposing (generate, mutate, predict)
        vta = target_kind(task.target) == "vta"  # the accelerator's tilings: counted features
        self._featurize = accel.featurize if vta else featurize

    # ---------------------------------------------------------------- features and scores
    def features(self, programs: Sequence[Program]) -> tuple[np.ndarray, np.ndarray]:
        """Feature rows (cached per program) with this tuner's host columns
        (`Tuner.host_row`), and whether each program lowers."""
        todo = list({p.key: p for p in programs if p.key not in self._rows}.values())
        if todo:
            rows, valid = self._featurize(todo)
            for p, row, ok in zip(todo, rows, valid, strict=True):
                self._rows[p.key] = row if ok else None
        valid = np.array([self._rows[p.key] is not None for p in programs], bool)
        x = np.zeros((len(programs), PROGRAM_FEATURE_LENGTH), np.float32)
        for k, p in enumerate(programs):
            if valid[k]:
                x[k] = self._rows[p.key]
        return with_host(x, self.host_row()), valid

    def scores(self, programs: Sequence[Program]) -> np.ndarray:
        """Predicted scores (higher is faster); -inf for programs that do not lower."""
        if not programs:
            return np.zeros(0)
        x, valid = self.features(programs)
        out = np.full(len(programs), -np.inf)
        if valid.any():
            out[valid] = self.model.predict(x[valid]) if self.model.fitted else 0.0
        return out

    # ------------------------------------------------------------------------ proposal
    def random_programs(self, n: int) -> list[Program]:
        """Up to n valid, distinct, unmeasured random programs (sketches in turn)."""
        out: dict[str, Program] = {}
        for attempt in range(8 * n + 8):
            if len(out) >= n:
                break
            p = annotate(self.sketches[attempt % len(self.sketches)], self.rng, None, self.threads)
            if p.key in out or p.index in self.visited:
                continue
            out[p.key] = p
        programs = list(out.values())
        _, valid = self.features(programs)
        return [p for p, ok in zip(programs, valid, strict=True) if ok]

    def evolve(self, population: list[Program]) -> list[Program]:
        """`generations` rounds of mutation and crossover; the population by score."""
        for _ in range(self.generations):
            scores = self.scores(population)
            ok = np.isfinite(scores)
            population = [p for p, k in zip(population, ok, strict=True) if k]
            if not population:
                return []
            scores = scores[ok]
            ranks = np.argsort(np.argsort(scores))  # selection by rank: robust to scale
            prob = (ranks + 1.0) / (ranks + 1.0).sum()
            children: list[Program] = []
            for _ in range(2 * len(population)):
                if len(children) >= len(population):
                    break
                a = population[self.rng.choice(len(population), p=prob)]
                if self.rng.random() < self.crossover_prob:
                    b = population[self.rng.choice(len(population), p=prob)]
                    child = crossover(a, b, self.rng)
                else:
                    child = mutate(a, self.rng, self.threads)
                if child is not None:
                    children.append(child)
            merged = list({p.key: p for p in [*population, *children]}.values())
            merged_scores = self.scores(merged)
            order = np.argsort(-merged_scores)[: self.population]
            population = [merged[k] for k in order if np.isfinite(merged_scores[k])]
        return population

    def next_batch(self, batch_size: int) -> list[Program]:
        start = time.perf_counter()
        try:
            if not self.model.fitted:
                return self.random_programs(batch_size)
            best = sorted(self.measured, key=lambda m: -m[1])[: self.elites]
            init = self.random_programs(self.population - len(best)) + [p for p, _ in best]
            population = self.evolve(init)
            n_random = int(round(self.eps * batch_size))
            picks: dict[str, Program] = {}
            for p in population:
                if len(picks) >= batch_size - n_random:
                    break
                if p.index not in self.visited:
                    picks.setdefault(p.key, p)
            for p in self.random_programs(batch_size - len(picks)):
                picks.setdefault(p.key, p)
            return list(picks.values())[:batch_size]
        finally:
            self.search_seconds += time.perf_counter() - start

    # ------------------------------------------------------------------------- learning
    def load_records(self, records: Sequence[Record]) -> int:
        """Resume from stored records, skipping programs this tuner has seen already (the task
        scheduler runs one tuner unit by unit against the same database)."""
        return super().load_records([r for r in records if r.config_index not in self.visited])

    def update(self, inputs: Sequence[MeasureInput], results: Sequence[Record]) -> None:
        super().update(inputs, results)
        for inp, res in zip(inputs, results, strict=True):
            self.measured.append((inp.config, self.throughput(res)))
            self._hosts.append(host_row(res.host, res.threads))
        programs = [p for p, _ in self.measured]
        x, valid = self.features(programs)
        x[:, -HOST_FEATURES:] = np.stack(self._hosts)
        y = np.array([t for _, t in self.measured])
        self.shared.fit(self.task.workload_key, x[valid], y[valid])

    @property
    def best_program(self) -> Program | None:
        return self.history.best_config  # type: ignore[return-value]
