"""The template-free auto-scheduler (Ansor style): sketches derived by rules from a compute
definition, randomly annotated into programs (lists of transformation steps), fine-tuned by
evolutionary search on the learned cost model, and a task scheduler for whole networks.

task = SearchTask("matmul", (512, 512, 512))
auto_schedule(task, 200, measure_option(), database=Database("t.db"))
s, args = best_schedule("matmul", (512, 512, 512), "llvm", "t.db")  # either tuner's best
"""

from __future__ import annotations

from typing import Any

from ..tune import tune
from ..tune.database import Database
from ..tune.measure import MeasureOption
from ..tune.tuner import TuningHistory
from . import gpu_steps  # noqa: F401 - registers the GPU step kinds
from .annotate import annotate, crossover, mutate
from .program import Program, SearchTask
from .search import AnsorTuner
from .sketch import SketchRule, generate_sketches, register_sketch_rule
from .workload import register_workload


def auto_schedule(
    task: SearchTask,
    n_trial: int,
    measure_option: MeasureOption,
    database: Database | None = None,
    seed: int = 0,
    progress: bool = True,
    **tune_kwargs: Any,
) -> TuningHistory:
    """Search programs of `task` for n_trial measurements (stored records count, so a run
    resumes); the history's best_config is the best Program."""
    tuner = AnsorTuner(task, seed=seed)
    return tune(
        task,  # type: ignore[arg-type]
        n_trial,
        measure_option,
        tuner,
        database=database,
        progress=progress,
        desc=f"{task.name} (ansor)",
        **tune_kwargs,
    )


__all__ = [
    "AnsorTuner",
    "Program",
    "SearchTask",
    "SketchRule",
    "annotate",
    "auto_schedule",
    "crossover",
    "generate_sketches",
    "mutate",
    "register_sketch_rule",
    "register_workload",
]
