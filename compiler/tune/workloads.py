"""Tuning named workloads on one target (what `vta tune WORKLOAD...` runs): the tasks, the
measurement set-up (local, or a Dask device pool whose boards' workers measure accelerator
runs) and the tuning run, with records in a database from which later tasks' cost models learn
(transfer)."""

from __future__ import annotations

from collections.abc import Sequence

from ..codegen.nvptx_arch import is_cuda_target
from ..errors import TuningError
from ..runtime.cuda import cuda_status, gpu_available
from . import tune_tasks
from .database import Database
from .measure import (
    CPURunner,
    CUDARunner,
    DeviceRunner,
    LocalBuilder,
    MeasureOption,
    Runner,
    measure_option,
)
from .pool import DaskPool
from .task import Task, create_task
from .tuner import TuningHistory

BOARD_RESOURCES = {"pynq": {"pynq": 1}}  # device -> the Dask worker resources it needs


def workload_task(op: str, args: tuple, target: str) -> Task:
    """The tuning task of one workload, its configuration space built (bad sizes fail here)."""
    task = create_task(op, args, target)
    task.config_space  # noqa: B018 - builds the space
    return task


def is_vta_target(target: str) -> bool:
    return target.split("/")[0].split()[0] == "vta"


def workload_measure_option(
    target: str,
    device: str = "sim",
    check: bool = False,
    scheduler: str | None = None,
    build_timeout: float = 30.0,
    threads: int | None = None,
) -> MeasureOption:
    """How candidates of `target` are built and measured: on this machine, or on a Dask pool at
    `scheduler` (an accelerator board's measurements go to the workers started with `vta worker
    --resources pynq=1`); the cycle simulator times Programs without data unless `check`. CPU
    kernels run with `threads` threads (None: the network executor's pool size, as deployed:
    `CPURunner`)."""
    resources = {"gpu": 1} if is_cuda_target(target) else None
    pool = DaskPool(scheduler, resources) if scheduler else None
    if is_cuda_target(target):
        runner: Runner = CUDARunner(pool=pool)
    elif is_vta_target(target):
        runner_pool = pool
        if pool is not None and device in BOARD_RESOURCES:
            runner_pool = DaskPool(scheduler, BOARD_RESOURCES[device])
        runner = DeviceRunner(device, check=check or device != "sim", pool=runner_pool)
    else:
        runner = CPURunner(threads=threads, pool=pool)
    return measure_option(LocalBuilder(timeout=build_timeout, pool=pool), runner)


def tune_workloads(
    tasks: Sequence[Task],
    target: str,
    n_trial: int,
    tuner: str = "xgb",
    db: str | None = None,
    device: str = "sim",
    check: bool = False,
    scheduler: str | None = None,
    build_timeout: float = 30.0,
    batch_size: int = 64,
    early_stopping: int | None = None,
    transfer: bool = True,
    seed: int = 0,
    threads: int | None = None,
) -> tuple[list[TuningHistory], str]:
    """Tune `tasks` (of `target`) one after another, CPU kernels measured with `threads`
    threads (None: the thread pool's size, `codegen.parallel.default_threads`); returns their
    histories and the unit of their throughputs (GFLOPS, or per cycle on the accelerator's
    devices)."""
    if is_cuda_target(target) and not gpu_available():
        raise TuningError(
            f"cannot tune for {target}: {cuda_status()}; "
            "`vta build WORKLOAD --target cuda --check` builds and checks kernels without one"
        )
    option = workload_measure_option(target, device, check, scheduler, build_timeout, threads)
    database = Database(db) if db else None
    try:
        histories = tune_tasks(
            list(tasks),
            n_trial,
            option,
            tuner=tuner,
            database=database,
            transfer=transfer,
            seed=seed,
            early_stopping=early_stopping,
            batch_size=batch_size,
        )
    finally:
        option.close()
        if database is not None:
            database.close()
    return histories, option.cost_unit
