"""Compiling with the best record of either tuner: the template tuner's (workload OP) or the
auto-scheduler's (workload ansor:OP, same arguments), whichever measured faster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import TuningError
from ..tune.database import Database
from ..tune.task import workload_key
from .program import KIND, Program, SearchTask
from .workload import WORKLOADS


def best_program(op: str, args: tuple, target: str, db: Database) -> tuple[Program, float] | None:
    """The auto-scheduler's best program of a workload in `db` and its cost (None: none)."""
    if op not in WORKLOADS:
        return None
    best = db.best(workload_key(f"{KIND}:{op}", args), target)
    if best is None:
        return None
    try:
        return Program.from_json(SearchTask(op, args, target), best.config), best.cost
    except TuningError:
        return None  # recorded by another version of the step language


def faster_program(op: str, args: tuple, target: str, db_path: str | Path | None) -> Program | None:
    """The auto-scheduler's best program if it beats the template tuner's best record of the
    same workload (or the template has none); else None (build the template's config)."""
    if not db_path or not Path(db_path).exists():
        return None
    with Database(db_path) as db:
        found = best_program(op, tuple(args), target, db)
        if found is None:
            return None
        template = db.best(workload_key(op, args), target)
    program, cost = found
    return program if template is None or cost < template.cost else None


def best_schedule(op: str, args: tuple, target: str, db_path: str | Path) -> tuple[Any, list, str]:
    """(schedule, tensors, which tuner) of a workload from the faster tuner's best record."""
    program = faster_program(op, args, target, db_path)
    if program is not None:
        s, tensors = program.schedule()
        return s, tensors, "auto-scheduler"
    from ..tune.dispatch import best_config
    from ..tune.task import create_task

    task = create_task(op, args, target)
    cfg = best_config(task, target, db_path)
    if cfg is None:
        raise TuningError(f"no record of {op}{tuple(args)} on {target} in {db_path}")
    s, tensors = task.instantiate(cfg)
    return s, tensors, "template"
