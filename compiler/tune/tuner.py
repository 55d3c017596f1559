"""The tuning loop shared by every tuner, and the model-free baselines (random, grid).

`Tuner.tune` asks the tuner for a batch of unmeasured configs, measures them, stores the
records (one transaction per batch), updates the tuner and calls the callbacks. Given a
database, it first replays the task's existing records, so a run killed at any point resumes
without losing or repeating a measurement.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import TuningError
from .database import Database
from .host import host_of, host_row
from .measure import MeasureOption
from .record import MeasureInput, Record
from .space import ConfigEntity
from .task import Task

Callback = Callable[["Tuner", Sequence[MeasureInput], Sequence[Record]], None]


@dataclass
class TuningHistory:
    """Throughput of every trial in order (0 for failures), its config index, and the best
    config so far."""

    throughputs: list[float] = field(default_factory=list)
    configs: list[int] = field(default_factory=list)
    best_config: ConfigEntity | None = None
    best_throughput: float = 0.0
    errors: int = 0

    def best_curve(self) -> np.ndarray:
        return np.maximum.accumulate(np.asarray(self.throughputs, dtype=np.float64))


class Tuner(abc.ABC):
    """Proposes configs of one task; never proposes a config it has already seen measured."""

    def __init__(self, task: Task, seed: int = 0):
        self.task = task
        self.space = task.config_space
        self.rng = np.random.default_rng(seed)
        self.visited: set[int] = set()
        self.history = TuningHistory()
        self.cost_unit = "s"
        self.threads: int | None = None  # the measuring runner's thread count (set by tune)

    @abc.abstractmethod
    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        """Up to batch_size configs not in self.visited."""

    def has_next(self) -> bool:
        return len(self.visited) < self.space.range_length

    def throughput(self, result: Record) -> float:
        """flop / cost (FLOP/s for wall time, ops per cycle for devices); 0 for a failure."""
        if not result.ok or not result.costs:
            return 0.0
        return (self.task.flop or 1.0) / max(result.cost, 1e-30)

    def host_row(self) -> np.ndarray:
        """The cost model's host columns of this tuner's measurements (`host.host_row`): the
        task's host, the runner's thread count."""
        return host_row(host_of(self.task.target), self.threads)

    def update(self, inputs: Sequence[MeasureInput], results: Sequence[Record]) -> None:
        """Learn from a measured batch; subclasses extend this (and call it)."""
        for inp, res in zip(inputs, results, strict=True):
            self.visited.add(inp.config.index)
            value = self.throughput(res)
            self.history.throughputs.append(value)
            self.history.configs.append(inp.config.index)
            self.history.errors += not res.ok
            if value > self.history.best_throughput:
                self.history.best_throughput = value
                self.history.best_config = inp.config

    def load_records(self, records: Sequence[Record]) -> int:
        """Replay this task's stored records (resume); returns how many applied."""
        inputs, results = [], []
        for r in records:
            if r.workload != self.task.workload_key or r.target != self.task.target:
                continue
            try:
                config = self.space.from_json(r.config)
            except TuningError:
                continue  # recorded under a different version of the template
            inputs.append(MeasureInput(self.task, config))
            results.append(r)
        if inputs:
            self.update(inputs, results)
        return len(inputs)

    def tune(
        self,
        n_trial: int,
        measure_option: MeasureOption,
        batch_size: int = 64,
        early_stopping: int | None = None,
        callbacks: Sequence[Callback] = (),
        database: Database | None = None,
    ) -> TuningHistory:
        """Measure up to n_trial configs in total (stored records count toward it: those
        measured with the runner's thread count; others, from another count or of an unknown
        one, are not resumed from, as their timings are not this run's)."""
        self.cost_unit = measure_option.cost_unit
        self.threads = getattr(getattr(measure_option, "runner", None), "threads", None)
        if database is not None:
            stored = database.records(self.task.workload_key, self.task.target)
            self.load_records([r for r in stored if r.threads == self.threads])
        best_at = int(np.argmax(self.history.throughputs)) if self.history.throughputs else 0
        while len(self.history.throughputs) < n_trial and self.has_next():
            todo = min(batch_size, n_trial - len(self.history.throughputs))
            configs = self.next_batch(todo)
            if not configs:
                break
            if any(c.index in self.visited for c in configs):
                raise TuningError(f"{type(self).__name__} proposed an already measured config")
            inputs = [MeasureInput(self.task, c) for c in configs]
            results = measure_option.measure(inputs)
            if database is not None:
                database.add_batch(results)
            before = self.history.best_throughput
            self.update(inputs, results)
            if self.history.best_throughput > before:
                best_at = len(self.history.throughputs)
            for callback in callbacks:
                callback(self, inputs, results)
            if early_stopping is not None and len(self.history.throughputs) >= (
                best_at + early_stopping
            ):
                break
        return self.history


class RandomTuner(Tuner):
    """Uniform random valid configs without repeats."""

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        picks = self.space.sample(self.rng, batch_size, exclude=self.visited)
        return [self.space.get(int(i)) for i in picks]


class GridSearchTuner(Tuner):
    """Valid configs in index order."""

    def __init__(self, task: Task, seed: int = 0):
        super().__init__(task, seed)
        self._next = 0

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out = []
        while len(out) < batch_size and self._next < self.space.range_length:
            i = self._next
            self._next += 1
            if i not in self.visited and self.space.is_valid(i):
                out.append(self.space.get(i))
        return out
