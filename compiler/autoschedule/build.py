"""One workload's kernel built into a file with the best record of either tuner (what `vta
build` runs): the auto-scheduler's program when it measured faster than the template's best
record, else that record, else the template's default config; nothing is measured.

For `cuda` the file is PTX that ptxas has assembled, and the report lists each kernel's launch,
registers, shared memory and spills (`problems`: a kernel that spills or exceeds the
architecture's limits); for `llvm` it is an object file (.o) or shared library (.so). `check`
runs the result on random inputs against the workload's numpy reference: the GPU kernels on the
emulator, the CPU function natively.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codegen.nvptx_arch import is_cuda_target
from ..driver import build
from ..errors import TuningError
from ..te.tensor import PlaceholderOp
from ..tune import templates  # noqa: F401 - registers the templates
from ..tune.dispatch import best_config
from ..tune.measure import WrongAnswer, check_outputs, random_arrays
from ..tune.space import ConfigEntity, FallbackConfigEntity
from ..tune.task import Task, create_task
from ..tune.templates.cuda import default_build
from .dispatch import faster_program


def chosen_config(task: Task, db: str | None) -> tuple[ConfigEntity | None, str]:
    """(config, where it came from): the best record in `db`, else the template's default
    (None for a GPU: default_build picks it by assembling candidates)."""
    if db:
        cfg = best_config(task, task.target, db)
        if cfg is not None:
            return cfg, f"best record in {db}"
    if is_cuda_target(task.target):
        return None, "template default (the nearest config ptxas accepts)"
    fallback = FallbackConfigEntity(task.config_space)
    if task.config_space.is_valid(fallback.index):
        return fallback, "template default"
    picks = task.config_space.sample(np.random.default_rng(0), 1)
    if not len(picks):
        raise TuningError(f"{task.workload_key}: the template has no valid config")
    return task.config_space.get(int(picks[0])), "first valid config"


def build_workload(
    op: str, args: tuple, target: str, out: str, db: str | None = None, check: bool = False
) -> dict[str, Any]:
    """Build (and optionally check) the workload `op(*args)` into the file `out`; returns the
    report: workload, target, config and its source, output, the GPU's kernels and problems,
    and the check's verdict ("ok" or "mismatch: ...")."""
    task = create_task(op, args, target)
    cfg, source = chosen_config(task, db)
    if (program := faster_program(op, args, target, db)) is not None:  # the auto-scheduler's
        cfg, source = program, f"auto-scheduler record in {db} (faster than the template's)"
        schedule, tensors = program.schedule()
        module = build(schedule, tensors, target=target)
    elif cfg is None:
        cfg, module = default_build(task)
        _, tensors = task.instantiate(cfg)
    else:
        schedule, tensors = task.instantiate(cfg)
        module = build(schedule, tensors, target=target)
    report: dict[str, Any] = {
        "workload": task.workload_key,
        "target": target,
        "config": cfg.to_json(),
        "config_source": source,
        "output": out,
    }
    if is_cuda_target(target):
        module.save(out)
        report["kernels"] = [
            {
                "name": k.name,
                "grid": list(k.grid),
                "block": list(k.block),
                "registers": module.stats[k.name].registers,
                "shared_bytes": module.stats[k.name].shared_bytes,
                "spill_bytes": module.stats[k.name].spills,
            }
            for k in module.kernels
        ]
        report["problems"] = module.problems()
    elif out.endswith(".so"):
        module.export_library(out)
    else:
        module.save(out)
    if check:
        specs = [(tuple(t.shape), t.dtype) for t in tensors]
        n_out = sum(not isinstance(t.op, PlaceholderOp) for t in tensors)
        report["check"] = _check(task, module, specs, n_out)
    return report


def _check(task: Task, module: Any, specs: list, n_out: int) -> str:
    n_in = len(specs) - n_out
    inputs = random_arrays(specs[:n_in])
    outputs = [np.zeros(shape, dtype) for shape, dtype in specs[n_in:]]
    run = module.emulate if is_cuda_target(task.target) else module
    run(*inputs, *outputs)
    try:
        check_outputs(task, inputs, outputs, rtol=1e-3)
    except WrongAnswer as err:
        return f"mismatch: {err}"
    return "ok"
