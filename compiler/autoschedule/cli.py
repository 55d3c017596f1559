"""`vta tune WORKLOAD... --tuner ansor` and `vta tune MODEL.onnx --tuner ansor`: the
auto-scheduler from the command line (the `tune` subcommand hands these over).

Targets: llvm, and cuda [--arch sm_XX] where a GPU exists to time the programs. Named
workloads (OP:ARGS of a registered compute definition, or a ResNet-18 layer C1..C12,
as NCHW16c conv2d) are searched one after another for --n-trial measurements each; a model's
fused convolution groups (`groups.py`) share a budget of --n-trial per task, allocated by the
gradient task scheduler.
"""

from __future__ import annotations

import argparse
import time

from ..codegen.nvptx_arch import is_cuda_target
from ..errors import TuningError
from ..runtime.cuda import cuda_status, gpu_available
from ..tune.callbacks import format_throughput
from ..tune.database import Database
from ..tune.measure import CPURunner, CUDARunner, LocalBuilder, Runner, measure_option
from . import auto_schedule
from .groups import describe, group_similarity, group_tasks
from .program import SearchTask
from .task_scheduler import TaskScheduler, network_tasks


def _tasks(names: list[str], target: str) -> list[SearchTask]:
    from ..tune.cli import parse_workload

    return [SearchTask(*parse_workload(name, target), target) for name in names]


def tune_ansor(args: argparse.Namespace) -> int:
    """Run the auto-scheduler for the `vta tune` arguments; returns the exit status."""
    from ..tune.cli import cuda_target

    args.target = cuda_target(args.target, args.arch)
    models = [w for w in args.workload if w.endswith(".onnx")]
    if is_cuda_target(args.target):
        if models:
            raise TuningError("--tuner ansor tunes models for --target llvm only")
        if not gpu_available():  # programs build without one, but nothing can time them
            raise TuningError(
                f"cannot tune for {args.target}: {cuda_status()}; "
                "`vta build WORKLOAD --target cuda --db F --check` builds a recorded program"
            )
        runner: Runner = CUDARunner()
    elif args.target.split()[:1] == ["llvm"]:
        runner = CPURunner(threads=1, pool=None)
    else:
        raise TuningError(f"--tuner ansor supports --target llvm or cuda, not {args.target!r}")
    option = measure_option(LocalBuilder(timeout=args.build_timeout), runner)
    db = Database(args.db) if args.db else None
    try:
        if models:
            return _tune_model(models[0], args, option, db)
        if not args.workload:
            raise TuningError("give workload names (OP:ARGS or C1..C12) or a MODEL.onnx")
        for name, task in zip(args.workload, _tasks(args.workload, args.target), strict=True):
            history = auto_schedule(
                task,
                args.n_trial,
                option,
                db,
                seed=args.seed,
                batch_size=args.batch_size,
                early_stopping=args.early_stopping,
            )
            best = format_throughput(history.best_throughput, option.cost_unit)
            print(
                f"{name}: best {best} after {len(history.throughputs)} trials, "
                f"{history.errors} errors; program:"
            )
            print(f"  {history.best_config}".replace("\n", "\n  "))
    finally:
        option.close()
        if db is not None:
            db.close()
    return 0


def _tune_model(path: str, args: argparse.Namespace, option, db) -> int:
    if db is None:
        raise TuningError("tuning a model needs --db FILE (its records make the compiled model)")
    tasks, weights = network_tasks(group_tasks(path, args.target), args.target)
    print(f"{path}: {len(tasks)} tasks, {args.n_trial * len(tasks)} trials (gradient scheduler)")
    start = time.perf_counter()
    similar = [group_similarity(t.args[0]) for t in tasks]
    sched = TaskScheduler(
        tasks, weights, option, database=db, unit=8, seed=args.seed, similarity=similar
    )
    result = sched.tune(args.n_trial * len(tasks))
    for task, w, cost in zip(tasks, weights, result.best_costs, strict=True):
        print(f"  {describe(task.args[0])} x{w:g}: {cost * 1e3:.3f} ms")
    print(
        f"estimated latency of the tuned tasks {result.latency[-1] * 1e3:.2f} ms after "
        f"{result.trials[-1]} trials in {time.perf_counter() - start:.0f} s; records in {args.db}"
    )
    return 0
