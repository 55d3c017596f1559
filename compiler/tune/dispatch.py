"""Build-time config selection: `apply_history_best` picks each workload's best record.

Templates' callers ask `get_config(task)`; inside `with apply_history_best(db):` they get the
best measured config of that workload and target, and outside it (or with no record) a
FallbackConfigEntity with a warning, never an error.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path

from ..errors import TuningError
from .database import Database
from .space import ConfigEntity, FallbackConfigEntity
from .task import Task, create_task

_stack: list[Database] = []
_warned: set[tuple[str, str]] = set()


@contextlib.contextmanager
def apply_history_best(records: Database | str) -> Iterator[Database]:
    """Within this block, get_config returns the best record of each workload and target."""
    db = records if isinstance(records, Database) else Database(records)
    _stack.append(db)
    try:
        yield db
    finally:
        _stack.pop()
        if db is not records:
            db.close()


def get_config(task: Task) -> ConfigEntity:
    """The best recorded config of the task, else the template's fallback (with a warning)."""
    for db in reversed(_stack):
        best = db.best(task.workload_key, task.target)
        if best is not None:
            try:
                return task.config_space.from_json(best.config)
            except TuningError:
                continue  # recorded under another version of the template
    key = (task.workload_key, task.target)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(
            f"cannot find a tuned config for target={task.target} workload="
            f"{task.workload_key}; using the fallback config (performance may be poor)",
            stacklevel=2,
        )
    return FallbackConfigEntity(task.config_space)


def best_config(
    task_or_workload: Task | tuple[str, tuple], target: str, db_path: str | Path
) -> ConfigEntity | None:
    """The best recorded config of a task (or an (op, args) workload) on `target` in the
    records database at `db_path`; None when the file or a usable record is missing."""
    if not Path(db_path).exists():
        return None
    task = task_or_workload
    if not isinstance(task, Task):
        op, args = task_or_workload
        task = create_task(op, args, target)
    with Database(db_path) as db:
        best = db.best(task.workload_key, target)
    if best is None:
        return None
    try:
        return task.config_space.from_json(best.config)
    except TuningError:
        return None  # recorded under another version of the template
