"""ONNX models on the CPU, the entry points the `vta run`, `vta compile` and `vta tune
MODEL.onnx` commands call (plain arguments; the accelerator's are in `accel_api.py`): load a
compiled model folder or compile an .onnx file, and find and tune a model's template tasks
(convolutions, dense layers, attention)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompilerError
from .graph_module import GraphModule

if TYPE_CHECKING:
    from ..tune.tuner import TuningHistory
    from .tasks import TemplateTask

Log = Callable[[str], None]


def load_model(
    path: str | Path,
    target: str = "llvm",
    db: str | None = None,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    log: Log | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
) -> GraphModule:
    """A model folder `vta compile --target llvm` wrote loads as it is (its one GraphModule);
    an .onnx file is compiled (`shapes` fixes its symbolic inputs' shapes, `db` gives tuned
    tasks their records), for the values `inputs` (the run's) gives the graph inputs it reads
    as constants, if any (Reduce axes, Reshape shapes ... given as inputs: the manifest's
    `bound_inputs` names them; the module takes the others)."""
    from ..tune.dispatch import cpu_history  # the compiler pipeline only when compiling
    from .build_onnx import compile_model
    from .onnx_import import InputValuesNeeded
    from .runtime import HybridModule

    p = Path(path)
    if p.is_dir():
        if HybridModule.saved_target(p) != "llvm":
            raise CompilerError(f"{path}: not a model folder `vta compile --target llvm` wrote")
        (step,) = HybridModule.load(p).steps
        return step.module
    if not p.is_file():
        raise CompilerError(f"{path}: no such model file or compiled model folder")
    with cpu_history(db, target) as records:  # --db's records, then the shipped ones
        names: list[str] = []  # grows by what each import finds it reads as constants
        while True:
            values = {n: inputs[n] for n in names} if inputs is not None else None
            try:
                module = compile_model(p, target, shapes=dict(shapes or {}), log=log,
                                       records=records, values=values)  # fmt: skip
                break
            except InputValuesNeeded as e:
                more = set(e.names) - set(names)
                if inputs is None or not more or not set(e.names) <= set(inputs):
                    raise
                names = sorted({*names, *e.names})
    if names:
        module.manifest["bound_inputs"] = names
    return module


def model_tasks(path: str | Path, target: str, log: Log = print) -> list[tuple[TemplateTask, int]]:
    """The model's distinct template tuning tasks (convolutions with the graph's channel
    blocks: those the build computes by Winograd have none, 1x1 ones it computes by
    input-channel chunks have the pointwise template's; dense layers with the graph's panel
    width; attention kernels) and how many kernels of the graph each one makes
    (`tasks.template_tasks` of the CPU-layout passes' groups, read in the target's scope as
    the build reads them); `log` gets the table of all the fused graph's distinct kernels
    first."""
    from ..codegen.target import target_scope
    from .tasks import model_groups, template_tasks

    cpu = model_groups(path, target, log)
    with target_scope(target):
        return template_tasks(cpu.groups, cpu.shapes)


def tune_model(
    path: str | Path,
    target: str,
    n_trial: int,
    db: str | None,
    tuner: str = "xgb",
    seed: int = 0,
    build_timeout: float = 30.0,
    log: Log = print,
    threads: int | None = None,
) -> list[tuple[TemplateTask, int, TuningHistory]]:
    """Tune every template task of the model (`model_tasks`) in turn on this CPU, resuming
    from and recording to `db` (needed: its records make the compiled model), a task's
    default schedule first where the template holds it (`tasks.default_config`), each kernel
    timed with `threads` threads (None: the thread pool's size, `codegen.parallel
    .default_threads`, which the compiled model runs its kernels on); `log` gets the kernel
    table and the task list before tuning. Returns (task, kernels using it, history) each."""
    from ..codegen.target import target_scope
    from ..tune import MeasureInput, tune_tasks
    from ..tune.database import Database
    from ..tune.measure import CPURunner, LocalBuilder, measure_option
    from ..tune.task import create_task
    from .tasks import default_config

    if target.split()[0] != "llvm":
        raise CompilerError(f"tuning a model supports --target llvm or vta, not {target!r}")
    if not db:
        raise CompilerError("tuning a model needs --db FILE (its records make the compiled model)")
    found = model_tasks(path, target, log)
    log(f"{path}: {len(found)} tunable tasks")
    for k, (task, weight) in enumerate(found, 1):
        log(f"  [{k}/{len(found)}] {task.label()} x{weight}")
    tasks = [create_task(t.template, t.task_args(), "llvm") for t, _ in found]
    with target_scope(target):
        defaults = [default_config(t) for t, _ in found]
    option = measure_option(
        LocalBuilder(timeout=build_timeout), CPURunner(threads=threads, pool=None)
    )
    try:
        with Database(db) as records:
            # a task's default schedule measured first (unless resuming): its best record is
            # then at least as fast as the build's default, as measured
            first = [
                MeasureInput(t, t.config_space.from_json(knobs))
                for t, knobs in zip(tasks, defaults, strict=True)
                if knobs and not records.records(t.workload_key, t.target)
            ]
            if first:
                records.add_batch(option.measure(first))
            histories = tune_tasks(tasks, n_trial, option, tuner=tuner, database=records, seed=seed)
    finally:
        option.close()
    return [(task, weight, h) for (task, weight), h in zip(found, histories, strict=True)]
