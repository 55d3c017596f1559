"""Compiling with the best record of either tuner: the template tuner's (workload OP) or the
auto-scheduler's (workload ansor:OP, same arguments), whichever measured faster. Records
measured with the thread count the kernel will run with (`threads`, None: the thread pool's
size) come first: one of another count serves (or wins) only where none of that count exists,
as in `tune.dispatch`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import TuningError
from ..tune.database import Database
from ..tune.task import workload_key
from .program import KIND, Program, SearchTask
from .workload import WORKLOADS


def _threads(threads: int | None) -> int:
    from ..codegen.abi import default_threads

    return default_threads() if threads is None else threads


def best_program(
    op: str, args: tuple, target: str, db: Database, threads: int | None = None
) -> tuple[Program, float, int | None] | None:
    """The auto-scheduler's best program of a workload in `db` (one measured with `threads`
    threads if any), its cost and the thread count it was measured with (None: none)."""
    if op not in WORKLOADS:
        return None
    best = db.best(workload_key(f"{KIND}:{op}", args), target, _threads(threads))
    if best is None:
        return None
    try:
        program = Program.from_json(SearchTask(op, args, target), best.config)
    except TuningError:
        return None  # recorded by another version of the step language
    return program, best.cost, best.threads


def faster_program(
    op: str, args: tuple, target: str, db_path: str | Path | None, threads: int | None = None
) -> Program | None:
    """The auto-scheduler's best program if it beats the template tuner's best record of the
    same workload (or the template has none); else None (build the template's config). A
    record measured with `threads` threads (None: the thread pool's size) beats one of another
    count whatever their costs."""
    if not db_path or not Path(db_path).exists():
        return None
    threads = _threads(threads)
    with Database(db_path) as db:
        found = best_program(op, tuple(args), target, db, threads)
        if found is None:
            return None
        template = db.best(workload_key(op, args), target, threads)
    program, cost, measured = found
    if template is None:
        return program
    rank = (measured != threads, cost) < (template.threads != threads, template.cost)
    return program if rank else None


def best_schedule(
    op: str, args: tuple, target: str, db_path: str | Path, threads: int | None = None
) -> tuple[Any, list, str]:
    """(schedule, tensors, which tuner) of a workload from the faster tuner's best record
    (records of `threads` threads first, None: the thread pool's size)."""
    program = faster_program(op, args, target, db_path, threads)
    if program is not None:
        s, tensors = program.schedule()
        return s, tensors, "auto-scheduler"
    from ..tune.dispatch import best_config
    from ..tune.task import create_task

    task = create_task(op, args, target)
    cfg = best_config(task, target, db_path, threads)
    if cfg is None:
        raise TuningError(f"no record of {op}{tuple(args)} on {target} in {db_path}")
    s, tensors = task.instantiate(cfg)
    return s, tensors, "template"
