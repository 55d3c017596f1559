"""`vta tune`: tune named workloads (or a workload list, or a model's tasks) with a progress
bar, records in a database (from which later tasks' cost models learn: transfer), an optional
tuning-curve plot and an optional Dask device pool.

Workloads are written OP:ARG,ARG,... (e.g. matmul:256,256,256), or a ResNet-18 layer name
(C1..C12; C2..C12 for the accelerator's conv2d_packed); --list FILE reads one workload per
line. `--target cuda [--arch sm_80]` tunes GPU kernels, which needs a CUDA GPU. MODEL.onnx
tunes the model's convolution tasks (--target llvm or vta; --db needed). `--tuner ansor` runs
the template-free auto-scheduler: workloads one after another (--target llvm, cuda, or vta:
C2..C12 and conv2d_packed/dense_packed:SIZES), or a model's fused convolution groups under
the gradient task scheduler (--target llvm).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import TuningError
from . import args as A


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `tune` subcommand to the `vta` command."""
    p = subparsers.add_parser(
        "tune",
        help="tune operator schedules (learned cost model)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "workload", nargs="*", help="OP:ARGS (matmul:256,256,256), C2..C12, or MODEL.onnx"
    )
    p.add_argument("--list", help="file with one workload per line")
    A.add_target(p, "llvm (CPU), cuda (GPU) or vta (accelerator)")
    A.add_arch(p)
    p.add_argument("--device", default="sim", help="accelerator device for --target vta")
    p.add_argument(
        "--config", help="--target vta: the accelerator to tune for (pynq, ultra96, tiny, a file)"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="--target vta on sim: run every candidate with data and check its outputs "
        "(default: cycles from the timing-only simulator)",
    )
    A.add_db(p, "SQLite records database (resumes, feeds apply_history_best)")
    p.add_argument("--plot", type=A.plot_path, help="write the tuning curves to this PNG")
    p.add_argument("--scheduler", help="Dask scheduler ADDRESS for a distributed device pool")
    p.add_argument(
        "--no-transfer",
        action="store_true",
        help="do not train the cost model on the database's records of other workloads",
    )
    A.add_tuning(p)
    p.add_argument(
        "--threads",
        type=A.thread_count,
        metavar="N",
        help="threads each CPU kernel is timed with: the count the tuned code will run with "
        "(default: the thread pool's size: VTA_NUM_THREADS or OMP_NUM_THREADS, else the cores "
        "this process may use)",
    )
    p.set_defaults(func=_tune)


def _tune(args: argparse.Namespace) -> int:
    target = A.cuda_target(args.target, args.arch)
    if args.config is not None:
        if not A.is_vta(target):
            raise TuningError("--config is the accelerator's: it needs --target vta")
        from ..vta.environment import vta_target

        target = vta_target(args.config)  # records name the configuration they were tuned for
    models, names = A.split_models(args.workload)
    if args.tuner == "ansor":  # the template-free auto-scheduler
        return _ansor_model(args, target, models[0]) if models else _ansor(args, target, names)
    if models:  # a whole model's tasks
        if A.is_vta(target):
            return _vta_model(args, models[0])
        return _cpu_model(args, target, models[0])
    return _workloads(args, target, names)


def _workloads(args: argparse.Namespace, target: str, names: list[str]) -> int:
    from ..tune.callbacks import format_throughput, plot_tuning_curve
    from ..tune.workloads import tune_workloads, workload_task

    if args.list:
        try:
            text = Path(args.list).read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise TuningError(f"--list {args.list}: not a UTF-8 text file ({e.reason})") from None
        names += [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not names:
        raise TuningError("give workload names or --list FILE")
    tasks = []
    for name in names:
        try:
            tasks.append(workload_task(*A.parse_workload(name, target), target))
        except TuningError as e:
            raise TuningError(f"workload {name!r}: {e}") from None
    histories, unit = tune_workloads(
        tasks,
        target,
        args.n_trial,
        tuner=args.tuner,
        db=args.db,
        device=args.device,
        check=args.check,
        scheduler=args.scheduler,
        build_timeout=args.build_timeout,
        batch_size=args.batch_size,
        early_stopping=args.early_stopping,
        transfer=not args.no_transfer,
        seed=args.seed,
        threads=args.threads,
    )
    for name, history in zip(names, histories, strict=True):
        best = format_throughput(history.best_throughput, unit)
        print(
            f"{name}: best {best} after {len(history.throughputs)} trials, "
            f"{history.errors} errors; config {history.best_config}"
        )
    if args.plot:
        curves = {name: h.throughputs for name, h in zip(names, histories, strict=True)}
        plot_tuning_curve(curves, args.plot, title=f"vta tune ({args.tuner})")
    failed = [name for name, h in zip(names, histories, strict=True) if h.best_config is None]
    if failed:
        print(
            f"vta tune: error: no trial succeeded for {', '.join(failed)} (see the errors above; "
            "a --build-timeout too short fails every build)",
            file=sys.stderr,
        )
        return 1
    return 0


def _cpu_model(args: argparse.Namespace, target: str, model: str) -> int:
    from ..graph.cpu_api import tune_model

    start = time.perf_counter()
    found = tune_model(
        model,
        target,
        args.n_trial,
        args.db,
        tuner=args.tuner,
        seed=args.seed,
        build_timeout=args.build_timeout,
        threads=args.threads,
    )
    for task, _, h in found:
        print(f"{task.label()}: {len(h.throughputs)} trials, {h.errors} errors")
    seconds = time.perf_counter() - start
    print(f"tuned {len(found)} tasks in {seconds:.1f} s; records in {args.db}")
    return 0


def _vta_model(args: argparse.Namespace, model: str) -> int:
    from ..graph.accel_api import tune_vta

    start = time.perf_counter()
    found = tune_vta(
        model,
        args.n_trial,
        args.db,
        device=args.device,
        check=args.check,
        tuner=args.tuner,
        seed=args.seed,
        build_timeout=args.build_timeout,
        config=args.config,
    )
    for task, task_args, weight, h in found:
        best = f"{task.flop / h.best_throughput:,.0f} cycles" if h.best_throughput else "none"
        print(f"  conv2d_fused{task_args[:9]} x{weight}: {len(h.throughputs)} trials, best {best}")
    seconds = time.perf_counter() - start
    print(f"tuned {len(found)} tasks in {seconds:.1f} s; records in {args.db}")
    return 0


def _ansor(args: argparse.Namespace, target: str, names: list[str]) -> int:
    from ..autoschedule.tuning import tune_workloads
    from ..tune.callbacks import format_throughput

    workloads = [A.parse_workload(name, target) for name in names]
    histories, unit = tune_workloads(
        workloads,
        target,
        args.n_trial,
        db=args.db,
        seed=args.seed,
        batch_size=args.batch_size,
        early_stopping=args.early_stopping,
        build_timeout=args.build_timeout,
        threads=args.threads,
        device=args.device,
        check=args.check,
    )
    for name, history in zip(names, histories, strict=True):
        best = format_throughput(history.best_throughput, unit)
        print(
            f"{name}: best {best} after {len(history.throughputs)} trials, "
            f"{history.errors} errors; program:"
        )
        print(f"  {history.best_config}".replace("\n", "\n  "))
    return 0


def _ansor_model(args: argparse.Namespace, target: str, model: str) -> int:
    from ..autoschedule.tuning import tune_network
    from ..graph.tasks import describe, group_similarity, group_tasks

    tuned = tune_network(
        model,
        group_tasks,
        target,
        args.n_trial,
        args.db,
        seed=args.seed,
        build_timeout=args.build_timeout,
        similarity=group_similarity,
        threads=args.threads,
    )
    result = tuned.result
    for task, w, cost in zip(tuned.tasks, tuned.weights, result.best_costs, strict=True):
        print(f"  {describe(task.args[0])} x{w:g}: {cost * 1e3:.3f} ms")
    print(
        f"estimated latency of the tuned tasks {result.latency[-1] * 1e3:.2f} ms after "
        f"{result.trials[-1]} trials in {tuned.seconds:.0f} s; records in {args.db}"
    )
    return 0
