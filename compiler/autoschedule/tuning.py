"""The auto-scheduler's tuning runs (what `vta tune --tuner ansor` runs): named workloads one
after another, or a model's fused convolution groups (the graph's `graph_group` workloads,
extracted by `compiler.graph.tasks.group_tasks` and handed in by the caller) sharing a budget
of `n_trial` per task, allocated by the gradient task scheduler.

Targets: llvm, cuda where a GPU exists to time the programs, and vta (the accelerator's
conv2d_packed and dense_packed, `accel.py`, measured as the template tuner measures them);
on cuda and vta workloads only.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..codegen.nvptx_arch import is_cuda_target
from ..errors import TuningError
from ..runtime.cuda import cuda_status, gpu_available
from ..tune.database import Database
from ..tune.measure import (
    CPURunner,
    CUDARunner,
    LocalBuilder,
    MeasureOption,
    Runner,
    measure_option,
)
from ..tune.task import target_kind
from ..tune.tuner import TuningHistory
from ..tune.workloads import workload_measure_option
from . import auto_schedule
from .program import SearchTask
from .task_scheduler import ScheduleResult, TaskScheduler, network_tasks


def _measure_option(
    target: str,
    model: bool,
    build_timeout: float,
    threads: int | None,
    device: str = "sim",
    check: bool = False,
) -> MeasureOption:
    """CPU programs are timed with `threads` threads (None: the thread pool's size, as a
    compiled network runs them: `CPURunner`); the accelerator's Programs in `device`'s cycles
    (`sim`: the timing-only simulator unless `check`), as the template tuner measures them."""
    if target_kind(target) == "vta":
        if model:
            raise TuningError(
                "--tuner ansor does not tune a model's accelerator kernels yet (they are "
                "emitted as fused Programs, not tensor expressions): use the template tuner"
            )
        return workload_measure_option(target, device, check, build_timeout=build_timeout)
    if is_cuda_target(target):
        if model:
            raise TuningError("--tuner ansor tunes models for --target llvm only")
        if not gpu_available():  # programs build without one, but nothing can time them
            raise TuningError(
                f"cannot tune for {target}: {cuda_status()}; "
                "`vta build WORKLOAD --target cuda --db F --check` builds a recorded program"
            )
        runner: Runner = CUDARunner()
    elif target.split()[:1] == ["llvm"]:
        runner = CPURunner(threads=threads, pool=None)
    else:
        raise TuningError(f"--tuner ansor supports --target llvm, cuda or vta, not {target!r}")
    return measure_option(LocalBuilder(timeout=build_timeout), runner)


def tune_workloads(
    workloads: Sequence[tuple[str, tuple]],
    target: str,
    n_trial: int,
    db: str | None = None,
    seed: int = 0,
    batch_size: int = 64,
    early_stopping: int | None = None,
    build_timeout: float = 30.0,
    threads: int | None = None,
    device: str = "sim",
    check: bool = False,
) -> tuple[list[TuningHistory], str]:
    """Search each workload (op, args) for `n_trial` measurements in turn, recording to `db`,
    CPU programs timed with `threads` threads (None: the thread pool's size), accelerator
    Programs in `device`'s cycles (checked against the reference if `check`); returns the
    histories (the best program is `best_config`) and the throughputs' unit."""
    option = _measure_option(target, False, build_timeout, threads, device, check)
    database = Database(db) if db else None
    try:
        if not workloads:
            raise TuningError("give workload names (OP:ARGS or C1..C12) or a MODEL.onnx")
        tasks = [SearchTask(op, tuple(args), target) for op, args in workloads]
        histories = [
            auto_schedule(
                task,
                n_trial,
                option,
                database,
                seed=seed,
                batch_size=batch_size,
                early_stopping=early_stopping,
            )
            for task in tasks
        ]
    finally:
        option.close()
        if database is not None:
            database.close()
    return histories, option.cost_unit


@dataclasses.dataclass
class NetworkTuning:
    """A model's tuned tasks: their groups' specs, weights (uses in the model) and the
    scheduler's result (best costs, the estimated latency after each round)."""

    tasks: list[SearchTask]
    weights: list[float]
    result: ScheduleResult
    seconds: float


def tune_network(
    model: str,
    tasks: Callable[[str, str], Sequence[tuple[tuple[str, tuple], float]]],
    target: str,
    n_trial: int,
    db: str | None,
    seed: int = 0,
    build_timeout: float = 30.0,
    log: Callable[[str], None] | None = print,
    similarity: Callable[[Any], str] | None = None,
    threads: int | None = None,
) -> NetworkTuning:
    """Tune the model's fused convolution groups, `tasks(model, target)` (((workload, args),
    uses in the model) each: `compiler.graph.tasks.group_tasks`, called once the options are
    checked), with `n_trial` trials per task, allocated by the gradient task scheduler
    (`similarity(args[0])`: a task's similarity key, `graph.tasks.group_similarity`),
    recording to `db` (needed: its records make the compiled model), programs timed with
    `threads` threads (None: the thread pool's size, which the compiled model's kernels run
    on); `log` gets the plan before the search starts."""
    option = _measure_option(target, True, build_timeout, threads)
    try:
        if db is None:
            raise TuningError(
                "tuning a model needs --db FILE (its records make the compiled model)"
            )
        with Database(db) as database:
            found, weights = network_tasks(tasks(model, target), target)
            if log:
                log(
                    f"{model}: {len(found)} tasks, {n_trial * len(found)} trials "
                    "(gradient scheduler)"
                )
            start = time.perf_counter()
            similar = [similarity(t.args[0]) for t in found] if similarity else None
            sched = TaskScheduler(
                found, weights, option, database=database, unit=8, seed=seed, similarity=similar
            )
            result = sched.tune(n_trial * len(found))
    finally:
        option.close()
    return NetworkTuning(list(found), list(weights), result, time.perf_counter() - start)
