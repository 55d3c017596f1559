"""Task scheduler: spend a network's trial budget on the tasks where it pays.

The objective is the network's estimated latency f = sum_i w_i g_i (w_i: how many times the
network runs task i, g_i: the task's best latency so far). Trials go in units of one batch.
After a warm-up unit per task, the gradient strategy gives the next unit to the task with the
steepest expected descent of f:

    df/dt_i = w_i (alpha (g_i(t_i) - g_i(t_i - dt)) / dt
                   + (1 - alpha) (min(g_i - g_i / t_i, beta C_i / max_{k in N(i)} V_k) - g_i))

(a backward difference over the last dt units; an optimistic forward guess: either the next
unit gains as much as the average unit so far, or the task reaches beta times the best
throughput V_k = C_k / g_k of a similar task k, C being FLOPs), or, with probability eps, to a
random task. A task whose last `patience` units brought no improvement has converged as far as
its own curve tells: the average-unit guess is dropped and only a similar task's speed can
still draw units to it. Round robin, the baseline, gives units in turn. Tasks are similar when
their `similarity` keys match (by default the workload name). All tasks' tuners share one cost
model (`search.SharedCostModel`), as the units of one task are few.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import TuningError
from ..tune.database import Database
from ..tune.measure import MeasureOption
from .program import SearchTask
from .search import AnsorTuner, SharedCostModel

STRATEGIES = ("gradient", "round-robin")
TuneUnit = Callable[[int, int], float]  # (task index, trials) -> the task's best cost so far


@dataclass
class ScheduleResult:
    """Per unit: the task tuned, the trials so far and the objective after it."""

    tasks: list[int] = field(default_factory=list)
    trials: list[int] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    best_costs: list[float] = field(default_factory=list)

    def trials_to_reach(self, latency: float) -> int | None:
        """Trials after which the objective first was <= latency (None: never)."""
        for n, value in zip(self.trials, self.latency, strict=True):
            if value <= latency:
                return n
        return None


class TaskScheduler:
    """Allocates units of `unit` trials over tasks by `strategy`; `tune_unit(i, n)` runs n
    more trials of task i and returns its best cost (the default: an AnsorTuner per task,
    measured with `measure_option`, records in `database`)."""

    def __init__(
        self,
        tasks: Sequence[SearchTask],
        weights: Sequence[float],
        measure_option: MeasureOption | None = None,
        strategy: str = "gradient",
        database: Database | None = None,
        unit: int = 16,
        alpha: float = 0.2,
        beta: float = 2.0,
        window: int = 3,
        eps: float = 0.05,
        patience: int = 3,
        seed: int = 0,
        similarity: Sequence[object] | None = None,
        tune_unit: TuneUnit | None = None,
        flops: Sequence[float] | None = None,
    ):
        if strategy not in STRATEGIES:
            raise TuningError(f"unknown task-scheduler strategy {strategy!r}; valid: {STRATEGIES}")
        if len(tasks) != len(weights) or not tasks:
            raise TuningError(f"{len(tasks)} tasks with {len(weights)} weights")
        if tune_unit is None and measure_option is None:
            raise TuningError("the task scheduler needs a measure option or a tune_unit function")
        self.tasks, self.weights = list(tasks), np.asarray(weights, np.float64)
        self.option, self.database = measure_option, database
        self.strategy, self.unit = strategy, unit
        self.alpha, self.beta, self.window, self.eps = alpha, beta, window, eps
        self.patience = patience
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.groups = list(similarity) if similarity is not None else [t.name for t in tasks]
        self.flops = np.asarray(flops if flops is not None else [t.flop for t in tasks])
        self.tune_unit = tune_unit or self._tune_with_ansor
        self.tuners: dict[int, AnsorTuner] = {}
        self.shared = SharedCostModel(seed)
        self.units = np.zeros(len(tasks), np.int64)
        self.history: list[list[float]] = [[] for _ in tasks]  # best cost after each unit

    def _tune_with_ansor(self, i: int, n: int) -> float:
        if i not in self.tuners:
            self.tuners[i] = AnsorTuner(self.tasks[i], seed=self.seed + i, shared=self.shared)
        tuner = self.tuners[i]
        tuner.tune(
            len(tuner.history.throughputs) + n,
            self.option,
            batch_size=n,
            database=self.database,
        )
        best = tuner.history.best_throughput
        return self.flops[i] / best if best > 0 else math.inf

    @property
    def best_costs(self) -> np.ndarray:
        return np.array([h[-1] if h else math.inf for h in self.history])

    def objective(self) -> float:
        return float((self.weights * self.best_costs).sum())

    def gradients(self) -> np.ndarray:
        """df/dt_i of every task (negative: tuning it is expected to lower the latency)."""
        g = self.best_costs
        out = np.zeros(len(self.tasks))
        for i, hist in enumerate(self.history):
            t = int(self.units[i])
            if not math.isfinite(g[i]):
                out[i] = -math.inf  # no valid program yet
                continue
            back = (hist[-1] - hist[-1 - self.window]) / self.window if t > self.window else 0.0
            stalled = t > self.patience and hist[-1] >= hist[-1 - self.patience]
            guess = g[i] if stalled else g[i] - g[i] / t
            peers = [k for k in range(len(self.tasks)) if self.groups[k] == self.groups[i]]
            if len(peers) > 1:
                best_speed = max(self.flops[k] / g[k] for k in peers)
                guess = min(guess, self.beta * self.flops[i] / best_speed)
            forward = guess - g[i]
            out[i] = self.weights[i] * (self.alpha * back + (1 - self.alpha) * forward)
        return out

    def next_task(self, step: int) -> int:
        if self.strategy == "round-robin":
            return step % len(self.tasks)
        if self.rng.random() < self.eps:
            return int(self.rng.integers(len(self.tasks)))
        grads = self.gradients()
        if grads.min() == grads.max():  # every task stalled: any
            return int(self.rng.integers(len(self.tasks)))
        return int(np.argmin(grads))  # a task with no valid program yet (-inf) goes first

    def _run_unit(self, i: int, result: ScheduleResult) -> None:
        self.history[i].append(float(self.tune_unit(i, self.unit)))
        self.units[i] += 1
        result.tasks.append(i)
        result.trials.append(int(self.units.sum()) * self.unit)
        result.latency.append(self.objective())

    def n_units(self, n_trials: int) -> int:
        """Units that spend n_trials (rounded down; at least one unit per task)."""
        return max(n_trials // self.unit, len(self.tasks))

    def step(self, result: ScheduleResult) -> None:
        """Run the next unit (the warm-up's first: one per task in order) into result."""
        step = int(self.units.sum())
        self._run_unit(step if step < len(self.tasks) else self.next_task(step), result)
        result.best_costs = self.best_costs.tolist()

    def tune(self, n_trials: int) -> ScheduleResult:
        """Spend n_trials (rounded down to whole units; at least one unit per task)."""
        result = ScheduleResult()
        for _ in range(self.n_units(n_trials)):
            self.step(result)
        return result


def network_tasks(
    pairs: Sequence[tuple[tuple[str, tuple], float]], target: str = "llvm"
) -> tuple[list[SearchTask], list[float]]:
    """Tasks and weights from ((workload name, args), weight) pairs (a network's extraction)."""
    tasks = [SearchTask(name, args, target) for (name, args), _ in pairs]
    return tasks, [float(w) for _, w in pairs]
