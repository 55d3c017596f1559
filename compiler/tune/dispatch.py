"""Build-time schedule selection: the dispatch context `ApplyHistoryBest` answers, for a
workload, the best record of its named record sources (searched in order, as TVM's
apply-history-best): a template's config (`config`, `query`) or a program of a registered
program kind (`program`: the auto-scheduler's, `register_program_kind`), with the source it
came from.

Templates' callers ask `get_config(task)`; inside `with apply_history_best(db):` they get the
best measured config of that workload and target, and outside it (or with no record) a
FallbackConfigEntity with a warning, never an error. A CPU model build's context is
`cpu_history(db, target)`: the user's records, then the records shipped for the target's
instruction set.

Records say the thread count they were measured with (`Record.threads`); a context prefers,
in every source, records measured with the thread count the build will run with (`threads`,
default the thread pool's size, `codegen.parallel.default_threads`). A record measured with
another count (or an unknown one) answers only where no source holds a matching one, and its
`Dispatched.note` says so, for the compile log.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TuningError
from .database import Database
from .record import MeasureErrorNo
from .space import ConfigEntity, FallbackConfigEntity
from .task import Task, create_task, workload_key

TEMPLATE = "template"  # a Dispatched config's kind when a template's config space parsed it

# program kinds (records with workload ["KIND:OP", args]): kind -> load(op, args, target,
# config) -> the program, or None when it cannot be rebuilt (unknown op, another version)
PROGRAM_KINDS: dict[str, Callable[[str, tuple, str, Any], Any]] = {}


def register_program_kind(kind: str, load: Callable[[str, tuple, str, Any], Any]) -> None:
    """Let `ApplyHistoryBest.program` rebuild records of `kind` (the auto-scheduler registers
    its programs, `ansor`)."""
    PROGRAM_KINDS[kind] = load


@dataclass(frozen=True)
class Dispatched:
    """What a dispatch context found: a config (a template's ConfigEntity, or a program of
    `kind`), its cost (the fastest timing) and the name of the records source holding it."""

    config: Any
    cost: float
    source: str
    kind: str = TEMPLATE
    task: Task | None = None  # a template config's task
    note: str = ""  # why it may not suit: measured with another thread count than the build's


def thread_note(measured: int | None, running: int) -> str:
    """'' when a record measured with `measured` threads suits a build running `running`; else
    what the compile log says ('record measured with 1 thread, running with 2')."""
    if measured == running:
        return ""
    what = "an unknown thread count" if measured is None else _threads(measured)
    return f"record measured with {what}, running with {running}"


def _threads(n: int) -> str:
    return f"{n} thread" if n == 1 else f"{n} threads"


class ApplyHistoryBest:
    """The dispatch context: named records sources searched in order, the first holding a
    usable record of a workload answering for it. Databases given by path (and all of them
    with `own=True`) are closed with the context. As a `with` block, `get_config` answers
    from it. `threads`: the thread count the build's kernels will run with (None: the thread
    pool's size); records measured with it are preferred over all others."""

    def __init__(
        self,
        sources: Database | str | Path | Sequence[tuple[str, Database | str | Path]] = (),
        own: bool = False,
        threads: int | None = None,
    ):
        from ..codegen.abi import default_threads

        self.threads = default_threads() if threads is None else threads
        if isinstance(sources, (Database, str, Path)):
            sources = [("records", sources)]
        self.sources: list[tuple[str, Database]] = []
        self._owned: list[Database] = []
        for name, db in sources:
            if not isinstance(db, Database):
                db = Database(db)
                self._owned.append(db)
            elif own:
                self._owned.append(db)
            self.sources.append((name, db))

    @property
    def names(self) -> list[str]:
        """The sources' names, in search order."""
        return [name for name, _ in self.sources]

    def close(self) -> None:
        for db in self._owned:
            db.close()
        self._owned = []

    def __enter__(self) -> ApplyHistoryBest:
        _stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _stack.remove(self)
        self.close()

    def config(self, task: Task) -> ConfigEntity | None:
        """The best record of the task in the first source with one its space parses,
        measured with the context's thread count if any source has one."""
        for exact in (True, False):
            for _, db in self.sources:
                best = db.best(task.workload_key, task.target, self.threads)
                if best is None or (exact and best.threads != self.threads):
                    continue
                try:
                    return task.config_space.from_json(best.config)
                except TuningError:
                    continue  # recorded under another version of the template
        return None

    def query(
        self, tasks: Sequence[Task], accept: Callable[[ConfigEntity], bool] | None = None
    ) -> Dispatched | None:
        """In the first source holding a successful record of any of `tasks` that its task's
        space parses and `accept` takes, the fastest of them (its config, cost, source and
        task); records measured with the context's thread count first (in any source), the
        others only when none is; None when no source holds one."""
        for exact in (True, False):
            for name, db in self.sources:
                best: Dispatched | None = None
                for task in tasks:
                    for r in db.records(task.workload_key, task.target):
                        if r.error_no != MeasureErrorNo.NO_ERROR or not r.costs:
                            continue
                        if exact and r.threads != self.threads:
                            continue
                        if best is not None and min(r.costs) >= best.cost:
                            continue
                        try:
                            cfg = task.config_space.from_json(r.config)
                        except Exception:  # a record of another template version
                            continue
                        if accept is None or accept(cfg):
                            note = thread_note(r.threads, self.threads)
                            best = Dispatched(cfg, min(r.costs), name, TEMPLATE, task, note)
                if best is not None:
                    return best
        return None

    def program(self, kind: str, op: str, args: tuple, target: str) -> Dispatched | None:
        """The best program of kind `kind` (a registered program kind) of the workload
        op(args) in the first source whose best record of it rebuilds, measured with the
        context's thread count if any source has one; None: none."""
        load = PROGRAM_KINDS.get(kind)
        if load is None:
            return None
        key = workload_key(f"{kind}:{op}", tuple(args))
        for exact in (True, False):
            for name, db in self.sources:
                best = db.best(key, target, self.threads)
                if best is None or (exact and best.threads != self.threads):
                    continue
                program = load(op, tuple(args), target, best.config)
                if program is not None:
                    note = thread_note(best.threads, self.threads)
                    return Dispatched(program, best.cost, name, kind, note=note)
        return None


_stack: list[ApplyHistoryBest] = []
_warned: set[tuple[str, str]] = set()


def apply_history_best(
    records: Database | str | Path, threads: int | None = None
) -> ApplyHistoryBest:
    """Within `with apply_history_best(db):`, get_config returns the best record of each
    workload and target in `db` (a Database stays open afterwards, a path is closed), one
    measured with `threads` threads (None: the thread pool's size) where there is one."""
    return ApplyHistoryBest(records, threads=threads)


def cpu_history(
    db: str | Path | None, target: str | Any, threads: int | None = None
) -> ApplyHistoryBest:
    """A CPU model build's dispatch context: the user's records `db` (source "records"), then
    the records shipped for `target`'s instruction set (`shipped.shipped_records`: none
    with VTA_SHIPPED_RECORDS=0) as "shipped records (ARCH-ISA)"; records measured with
    `threads` threads (None: the thread pool's size, which the model's kernels run on) are
    preferred."""
    from ..codegen.target import target_scope
    from .shipped import shipped_name, shipped_records

    sources: list[tuple[str, Database]] = [("records", Database(db))] if db else []
    with target_scope(target) as tgt:
        shipped = shipped_records(tgt)
        if shipped:
            sources.append((f"shipped records ({shipped_name(tgt)})", shipped))
    return ApplyHistoryBest(sources, own=True, threads=threads)


def get_config(task: Task) -> ConfigEntity:
    """The best recorded config of the task, else the template's fallback (with a warning)."""
    for context in reversed(_stack):
        cfg = context.config(task)
        if cfg is not None:
            return cfg
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
    task_or_workload: Task | tuple[str, tuple],
    target: str,
    db_path: str | Path,
    threads: int | None = None,
) -> ConfigEntity | None:
    """The best recorded config of a task (or an (op, args) workload) on `target` in the
    records database at `db_path`, one measured with `threads` threads (None: the thread
    pool's size) if there is one; None when the file or a usable record is missing."""
    if not Path(db_path).exists():
        return None
    task = task_or_workload
    if not isinstance(task, Task):
        op, args = task_or_workload
        task = create_task(op, args, target)
    if threads is None:
        from ..codegen.abi import default_threads

        threads = default_threads()
    with Database(db_path) as db:
        best = db.best(task.workload_key, target, threads)
    if best is None:
        return None
    try:
        return task.config_space.from_json(best.config)
    except TuningError:
        return None  # recorded under another version of the template
