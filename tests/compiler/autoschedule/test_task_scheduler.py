"""Task scheduler allocation on synthetic tuning curves."""

import math

import numpy as np
import pytest

from compiler.autoschedule.program import SearchTask
from compiler.autoschedule.task_scheduler import TaskScheduler
from compiler.errors import TuningError


class Curves:
    """Task i's best cost after n trials: floor_i + (start_i - floor_i) * decay_i ** n."""

    def __init__(self, start, floor, decay):
        self.start, self.floor, self.decay = map(np.asarray, (start, floor, decay))
        self.trials = np.zeros(len(start), np.int64)

    def __call__(self, i, n):
        self.trials[i] += n
        return float(
            self.floor[i] + (self.start[i] - self.floor[i]) * self.decay[i] ** self.trials[i]
        )


def _scheduler(curves, weights, strategy, **kw):
    tasks = [SearchTask("matmul", (8, 8, 8 * (k + 1))) for k in range(len(weights))]
    return TaskScheduler(tasks, weights, strategy=strategy, unit=8, eps=0.0, tune_unit=curves, **kw)


def test_gradient_spends_on_the_task_that_dominates_latency():
    # task 0: heavy (weight 4), slow and still improving; tasks 1-2: light and converged early
    args = ([10.0, 1.0, 1.0], [1.0, 0.9, 0.9], [0.97, 0.5, 0.5])
    grad = _scheduler(Curves(*args), [4, 1, 1], "gradient")
    rr = _scheduler(Curves(*args), [4, 1, 1], "round-robin")
    g, r = grad.tune(240), rr.tune(240)
    assert g.tasks[:3] == [0, 1, 2] and r.tasks[:6] == [0, 1, 2, 0, 1, 2]  # warm-up
    assert np.bincount(g.tasks)[0] > 0.7 * len(g.tasks)
    assert g.latency[-1] < r.latency[-1]
    assert g.trials_to_reach(r.latency[-1]) <= 0.6 * r.trials[-1]


def test_similar_tasks_bound_the_optimistic_guess():
    # equal curves, but task 1 is similar to a task already 10x faster per FLOP: beta * C / V
    s = _scheduler(
        Curves([1.0] * 3, [0.5] * 3, [0.9] * 3),
        [1, 1, 1],
        "gradient",
        similarity=["a", "b", "b"],
        flops=[1, 1, 1],
    )
    s.history = [[1.0] * 4, [1.0] * 4, [0.1] * 4]  # four units each, no progress lately
    s.units[:] = 4
    grads = s.gradients()
    # all three stalled (patience 3): only task 1 can still gain, reaching beta x task 2's speed
    assert grads[1] < 0 and grads[0] == grads[2] == 0
    s.patience = 8  # not stalled: the average-unit guess again, task 1 still ahead
    grads = s.gradients()
    assert grads[1] < grads[0] < 0


def test_a_stalled_task_stops_drawing_units():
    # task 0 converges in its first unit, task 1 improves slowly throughout; not similar
    def scheduler():
        curves = Curves([10.0, 4.0], [5.0, 1.0], [0.0, 0.99])
        return _scheduler(curves, [1, 1], "gradient", similarity=["a", "b"])

    s = scheduler()
    units = np.bincount(s.tune(8 * 40).tasks)
    assert units[0] == 1 + s.patience  # its first unit, then the units that show the stall
    never = scheduler()
    never.patience = 10**6  # the average-unit guess alone keeps giving task 0 units
    assert np.bincount(never.tune(8 * 40).tasks)[0] > 2 * units[0]


def test_untuned_task_goes_first_and_bad_arguments_fail():
    curves = Curves([math.inf, 1.0], [1.0, 0.5], [0.5, 0.5])
    s = _scheduler(curves, [1, 1], "gradient")
    s.history = [[math.inf], [1.0]]
    s.units[:] = 1
    assert s.next_task(5) == 0
    with pytest.raises(TuningError, match="strategy"):
        _scheduler(curves, [1, 1], "greedy")
    with pytest.raises(TuningError, match="weights"):
        TaskScheduler(s.tasks, [1], tune_unit=curves)
