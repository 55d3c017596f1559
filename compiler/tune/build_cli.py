"""`vta build WORKLOAD --target cuda|llvm`: compile one workload with its best record (or the
template's default config) into a file, without measuring anything.

For `cuda` the file is PTX that ptxas has assembled, and the report lists each kernel's launch,
registers, shared memory and spills (a kernel that spills or exceeds the architecture's limits
fails the build); for `llvm` it is an object file (.o) or shared library (.so). `--check` runs
the result on random inputs against the workload's numpy reference: the GPU kernels on the
emulator, the CPU function natively. Exit 0 on success, 1 on a failed check or a flagged
kernel, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from ..autoschedule.dispatch import faster_program
from ..codegen.nvptx_arch import is_cuda_target
from ..driver import build
from ..errors import TuningError
from ..te.tensor import PlaceholderOp
from . import templates  # noqa: F401 - registers the templates
from .cli import cuda_target, parse_workload
from .dispatch import best_config
from .measure import WrongAnswer, check_outputs, random_arrays
from .space import ConfigEntity, FallbackConfigEntity
from .task import Task, create_task
from .templates.cuda import default_build


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
    workload: str, target: str, out: str, db: str | None = None, check: bool = False
) -> dict[str, Any]:
    """Build (and optionally check) one workload; returns the report `vta build` prints."""
    op, args = parse_workload(workload, target)
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


def _print(report: dict[str, Any]) -> None:
    print(f"{report['workload']} on {report['target']} -> {report['output']}")
    print(f"config ({report['config_source']}): {json.dumps(report['config'])}")
    if "kernels" in report:
        print(f"{'kernel':<16} {'grid':>14} {'block':>12} {'regs':>5} {'smem B':>7} {'spill B':>7}")
        for k in report["kernels"]:
            grid, block = "x".join(map(str, k["grid"])), "x".join(map(str, k["block"]))
            print(
                f"{k['name']:<16} {grid:>14} {block:>12} {k['registers']:>5} "
                f"{k['shared_bytes']:>7} {k['spill_bytes']:>7}"
            )
        for p in report["problems"]:
            print(f"flagged: {p}")
    if "check" in report:
        print(f"check against numpy: {report['check']}")


def _cmd_build(args: argparse.Namespace) -> int:
    target = cuda_target(args.target, args.arch)
    report = build_workload(args.workload, target, args.output, args.db, args.check)
    if args.json:
        print(json.dumps(report))
    else:
        _print(report)
    failed = report.get("problems") or report.get("check", "ok") != "ok"
    return 1 if failed else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `build` subcommand to the `vta` command."""
    p = subparsers.add_parser("build", help="compile a workload's kernel (best record or default)")
    p.add_argument("workload", help="OP:ARGS (matmul:1024,1024,1024), or a layer name (C1..C12)")
    p.add_argument("--target", default="llvm", help="cuda (PTX) or llvm (CPU object/library)")
    p.add_argument("--arch", help="GPU architecture for --target cuda (sm_80, sm_90)")
    p.add_argument("-o", "--output", required=True, help="file to write (.ptx; .o or .so)")
    p.add_argument("--db", help="records database: build its best config of the workload")
    p.add_argument("--check", action="store_true", help="run on random inputs against numpy")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_build)
