"""The target-agnostic learned tuner: templates, records, XGBoost cost model, search, measurement.

task = create_task("matmul", (512, 512, 512), "llvm")
tune(task, 200, measure_option(LocalBuilder(build), CPURunner()), database=Database("t.db"))
with apply_history_best("t.db"):
    cfg = get_config(task)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import TuningError
from .callbacks import ProgressBar, plot_tuning_curve
from .cost_model import XGBCostModel
from .database import Database
from .dispatch import apply_history_best, best_config, get_config
from .features import Loop, LoopNest
from .featurizer import Featurizer
from .ga_tuner import GATuner
from .measure import (
    CPURunner,
    CUDARunner,
    DeviceRunner,
    LocalBuilder,
    MeasureOption,
    Runner,
    measure_option,
)
from .pool import DaskPool, LocalPool
from .record import MeasureErrorNo, MeasureInput, Record
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from .task import Task, create_task, register_reference, register_template
from .tuner import GridSearchTuner, RandomTuner, Tuner, TuningHistory
from .xgb_tuner import XGBTuner

# Last: the built-in templates register themselves with the modules above on import.
from . import templates  # noqa: E402,F401  isort: skip

TUNERS = {
    "xgb": lambda task, seed: XGBTuner(task, loss="rank", seed=seed),
    "xgb-rank": lambda task, seed: XGBTuner(task, loss="rank", seed=seed),
    "xgb-reg": lambda task, seed: XGBTuner(task, loss="reg", seed=seed),
    "xgb-knob": lambda task, seed: XGBTuner(task, feature_type="knob", seed=seed),
    "random": lambda task, seed: RandomTuner(task, seed=seed),
    "grid": lambda task, seed: GridSearchTuner(task, seed=seed),
    "ga": lambda task, seed: GATuner(task, seed=seed),
}


def make_tuner(name: str, task: Task, seed: int = 0) -> Tuner:
    """A tuner of `task` by name (TUNERS)."""
    if name not in TUNERS:
        raise TuningError(f"unknown tuner {name!r}; choose from {sorted(TUNERS)}")
    return TUNERS[name](task, seed)


def tune(
    task: Task,
    n_trial: int,
    measure_option: MeasureOption,
    tuner: str | Tuner = "xgb",
    callbacks: Sequence[Any] = (),
    database: Database | None = None,
    transfer: bool = False,
    progress: bool = True,
    seed: int = 0,
    desc: str | None = None,
    **tune_kwargs: Any,
) -> TuningHistory:
    """Tune one task; records go to `database`, which also seeds resume and transfer (the
    progress bar says +transfer when the database held enough records for a global model)."""
    if isinstance(tuner, str):
        tuner = make_tuner(tuner, task, seed)
    desc = desc or task.op
    if transfer:
        if database is None or not isinstance(tuner, XGBTuner):
            raise TuningError("transfer learning needs an XGB tuner and a records database")
        desc += " +transfer" if tuner.transfer_from(database) else ""
    bar = ProgressBar(n_trial, desc=desc) if progress else None
    try:
        return tuner.tune(
            n_trial,
            measure_option,
            callbacks=[*callbacks, *filter(None, [bar])],
            database=database,
            **tune_kwargs,
        )
    finally:
        if bar is not None:
            bar.close()


def tune_tasks(
    tasks: Sequence[Task],
    n_trial: int,
    measure_option: MeasureOption,
    tuner: str = "xgb",
    database: Database | None = None,
    transfer: bool = True,
    progress: bool = True,
    seed: int = 0,
    **tune_kwargs: Any,
) -> list[TuningHistory]:
    """Tune every task in turn, e.g. all operators of a network (AutoTVM's tune_tasks recipe).

    With a database and a model-based tuner, each task's cost model first learns from the
    records of every other workload there -- the tasks tuned before it in this call included
    -- so later tasks start from a model instead of random configs (`transfer=False` turns it
    off). Each task gets its own progress bar, numbered [k/n].
    """
    histories = []
    for k, task in enumerate(tasks, 1):
        t = make_tuner(tuner, task, seed)
        histories.append(
            tune(
                task,
                n_trial,
                measure_option,
                t,
                database=database,
                transfer=transfer and database is not None and isinstance(t, XGBTuner),
                progress=progress,
                desc=f"[{k}/{len(tasks)}] {task.op}",
                **tune_kwargs,
            )
        )
    return histories


__all__ = [
    "CPURunner",
    "CUDARunner",
    "ConfigEntity",
    "ConfigSpace",
    "DaskPool",
    "Database",
    "DeviceRunner",
    "FallbackConfigEntity",
    "Featurizer",
    "GATuner",
    "GridSearchTuner",
    "LocalBuilder",
    "LocalPool",
    "Loop",
    "LoopNest",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureOption",
    "RandomTuner",
    "Record",
    "Runner",
    "Task",
    "Tuner",
    "TuningHistory",
    "XGBCostModel",
    "XGBTuner",
    "apply_history_best",
    "best_config",
    "create_task",
    "get_config",
    "make_tuner",
    "measure_option",
    "plot_tuning_curve",
    "register_reference",
    "register_template",
    "tune",
    "tune_tasks",
]
