"""`vta tune`: tune named workloads (or every task of a workload list) with a progress bar,
records in a database (from which later tasks' cost models learn: transfer), an optional
tuning-curve plot and an optional Dask device pool.

Workloads are written OP:ARG,ARG,... (e.g. matmul:256,256,256), or a ResNet-18 layer name
(C1..C12; C2..C12 for the accelerator's conv2d_packed); --list FILE reads one workload per
line. `--target cuda [--arch sm_80]` tunes GPU kernels, which needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

from ..codegen.nvptx_arch import get_arch, is_cuda_target
from ..errors import TuningError
from ..runtime.cuda import cuda_status, gpu_available
from . import tune_tasks
from .callbacks import format_throughput, plot_tuning_curve
from .database import Database
from .measure import CPURunner, CUDARunner, DeviceRunner, LocalBuilder, Runner, measure_option
from .pool import DaskPool
from .task import create_task
from .templates.resnet18 import resnet18_task_args

TUNERS = ("xgb", "xgb-reg", "random", "grid", "ga", "ansor")
BOARD_RESOURCES = {"pynq": {"pynq": 1}}  # device -> the Dask worker resources it needs


def parse_workload(text: str, target: str) -> tuple[str, tuple]:
    """'matmul:64,64,64' -> ('matmul', (64, 64, 64)); 'C9' -> the ResNet-18 layer on `target`."""
    if ":" not in text:
        return resnet18_task_args(text, target)
    op, _, args = text.partition(":")
    try:
        return op, tuple(int(a) for a in args.split(",") if a)
    except ValueError:
        raise TuningError(f"workload {text!r}: arguments must be integers (OP:1,2,3)") from None


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= low (a bad value is a usage error, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {low}")
        return value

    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def target_name(text: str) -> str:
    """An argparse type: a non-empty target string ('llvm', 'llvm -mcpu=...', 'cuda', 'vta')."""
    if not text.split():
        raise argparse.ArgumentTypeError("the target is empty; give llvm, cuda or vta")
    return text


def plot_path(text: str) -> str:
    """An argparse type: an image path whose extension matplotlib writes (checked before any
    tuning, not after it)."""
    from matplotlib.figure import Figure

    kinds = Figure().canvas.get_supported_filetypes()
    ext = Path(text).suffix.lower().lstrip(".")
    if ext not in kinds:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the extension must be one of {', '.join(sorted(kinds))}"
        )
    return text


def cuda_target(target: str, arch: str | None) -> str:
    """'cuda' with --arch sm_90 -> 'cuda -arch=sm_90' (checked); other targets unchanged."""
    if arch is None:
        return target
    if not is_cuda_target(target):
        raise TuningError(f"--arch applies to --target cuda, not {target!r}")
    return f"cuda -arch={get_arch(arch).name}"


def _cmd_tune(args: argparse.Namespace) -> int:
    if args.tuner == "ansor":  # the template-free auto-scheduler
        from ..autoschedule.cli import tune_ansor

        return tune_ansor(args)
    if any(w.endswith(".onnx") for w in args.workload):
        from ..graph.cli import tune_model  # a whole model's tasks

        return tune_model(args)
    names = list(args.workload)
    if args.list:
        try:
            text = Path(args.list).read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise TuningError(f"--list {args.list}: not a UTF-8 text file ({e.reason})") from None
        names += [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not names:
        raise TuningError("give workload names or --list FILE")
    target = cuda_target(args.target, args.arch)
    tasks = []
    for name in names:
        try:
            task = create_task(*parse_workload(name, target), target)
            task.config_space  # noqa: B018 - builds the space: bad sizes fail here, named
        except TuningError as e:
            raise TuningError(f"workload {name!r}: {e}") from None
        tasks.append(task)
    is_vta = target.split("/")[0] == "vta"
    if is_cuda_target(target) and not gpu_available():
        print(
            f"vta tune: cannot tune for {target}: {cuda_status()}; "
            "`vta build WORKLOAD --target cuda --check` builds and checks kernels without one",
            file=sys.stderr,
        )
        return 1
    resources = {"gpu": 1} if is_cuda_target(target) else None
    pool = DaskPool(args.scheduler, resources) if args.scheduler else None
    if is_cuda_target(target):
        runner: Runner = CUDARunner(pool=pool)
    else:
        # Measurements on a board go to the workers `vta worker --resources pynq=1` started.
        runner_pool = pool
        if is_vta and pool is not None and args.device in BOARD_RESOURCES:
            runner_pool = DaskPool(args.scheduler, BOARD_RESOURCES[args.device])
        # the cycle simulator times Programs without data unless --check asks for outputs
        check = args.check or args.device != "sim"
        runner = (
            DeviceRunner(args.device, check=check, pool=runner_pool)
            if is_vta
            else CPURunner(pool=pool)
        )
    option = measure_option(LocalBuilder(timeout=args.build_timeout, pool=pool), runner)
    db = Database(args.db) if args.db else None
    try:
        histories = tune_tasks(
            tasks,
            args.n_trial,
            option,
            tuner=args.tuner,
            database=db,
            transfer=not args.no_transfer,
            seed=args.seed,
            early_stopping=args.early_stopping,
            batch_size=args.batch_size,
        )
    finally:
        option.close()
    for name, history in zip(names, histories, strict=True):
        best = format_throughput(history.best_throughput, option.cost_unit)
        print(
            f"{name}: best {best} after {len(history.throughputs)} trials, "
            f"{history.errors} errors; config {history.best_config}"
        )
    curves = {name: h.throughputs for name, h in zip(names, histories, strict=True)}
    if args.plot:
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


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `tune` subcommand to the `vta` command."""
    p = subparsers.add_parser("tune", help="tune operator schedules (learned cost model)")
    p.add_argument(
        "workload", nargs="*", help="OP:ARGS (matmul:256,256,256), C2..C12, or MODEL.onnx"
    )
    p.add_argument("--list", help="file with one workload per line")
    p.add_argument(
        "--target",
        type=target_name,
        default="llvm",
        help="llvm (CPU), cuda (GPU) or vta (accelerator)",
    )
    p.add_argument("--arch", help="GPU architecture for --target cuda (sm_80, sm_90)")
    p.add_argument("--device", default="sim", help="accelerator device for --target vta")
    p.add_argument(
        "--check",
        action="store_true",
        help="--target vta on sim: run every candidate with data and check its outputs "
        "(default: cycles from the timing-only simulator)",
    )
    p.add_argument("--n-trial", type=int_at_least(1), default=200, help="measurements per workload")
    p.add_argument("--tuner", choices=TUNERS, default="xgb")
    p.add_argument("--db", help="SQLite records database (resumes, feeds apply_history_best)")
    p.add_argument("--plot", type=plot_path, help="write the tuning curves to this PNG")
    p.add_argument("--scheduler", help="Dask scheduler ADDRESS for a distributed device pool")
    p.add_argument("--build-timeout", type=positive_seconds, default=30.0, help="seconds per build")
    p.add_argument(
        "--batch-size",
        type=int_at_least(1),
        default=64,
        help="configs proposed and measured per batch",
    )
    p.add_argument(
        "--early-stopping",
        type=int_at_least(1),
        metavar="N",
        help="stop a workload after N trials without a better config",
    )
    p.add_argument(
        "--no-transfer",
        action="store_true",
        help="do not train the cost model on the database's records of other workloads",
    )
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.set_defaults(func=_cmd_tune)
