"""ONNX models on the accelerator, the entry points `vta compile/run/tune MODEL.onnx --target
vta` call (plain arguments): the model through the graph passes, partitioned, calibrated,
quantized and compiled into a `runtime.HybridModule`, saved and loaded, run on a device with
every accelerator group checked bit for bit against the quantized reference and a per-group
report (`runtime.run_vta`), and its conv2d_fused tasks tuned. The rest of the toolkit reaches
the accelerator path through this module, but for the run of a compiled folder, which imports
`runtime` alone (no compiler: what a board runs)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vta.config import VTAConfig

from ..errors import CompilerError
from .build_onnx import fused_graph
from .hybrid import compile_for_accelerator, tuning_tasks
from .ir import Graph
from .passes.partition import partition
from .passes.quantize import calibrate, quantize
from .runtime import HybridModule, board_latency_ms, run_vta

if TYPE_CHECKING:
    from ..tune.task import Task
    from ..tune.tuner import TuningHistory

SEEDED_INPUTS = 4
Compiled = HybridModule


def seeded_inputs(graph: Graph, n: int = SEEDED_INPUTS) -> list[dict[str, np.ndarray]]:
    """`n` seeded standard-normal inputs of the graph's shapes."""
    rng = np.random.default_rng(0)
    shapes = {t: graph.value(t).shape for t in graph.inputs}
    return [{t: rng.standard_normal(s).astype(np.float32) for t, s in shapes.items()}
            for _ in range(n)]  # fmt: skip


def calibration_inputs(
    graph: Graph, calibration: str | None, given: Mapping[str, np.ndarray] | None = None
) -> tuple[list[dict[str, np.ndarray]], str]:
    """The calibration inputs of `graph` and what they are: the .npz file `calibration` (each
    input by name, any number of them stacked on the batch axis), else the inputs `given`
    to the run, else `SEEDED_INPUTS` seeded standard-normal ones."""
    from vta.program_file import read_arrays

    shapes = {t: graph.value(t).shape for t in graph.inputs}
    if calibration:
        arrays = read_arrays(calibration, what="--calibration")
        missing = [t for t in shapes if t not in arrays]
        if missing:
            raise CompilerError(f"--calibration {calibration}: no array {', '.join(missing)}")
        counts = set()
        for t, shape in shapes.items():
            x, batch = arrays[t], shape[0] if shape else 1
            if x.shape[1:] != shape[1:] or x.shape[0] % batch or not x.shape[0]:
                raise CompilerError(
                    f"--calibration {calibration}: '{t}' has shape {list(x.shape)}; expected "
                    f"[k * {batch}, {', '.join(map(str, shape[1:]))}]"
                )
            counts.add(x.shape[0] // batch)
        if len(counts) != 1:
            raise CompilerError(f"--calibration {calibration}: the inputs hold different counts")
        (n,) = counts
        feeds = [{t: arrays[t][k * s[0] : (k + 1) * s[0]].astype(np.float32)
                  for t, s in shapes.items()} for k in range(n)]  # fmt: skip
        return feeds, f"{calibration} ({n} inputs)"
    if given is not None:
        return [dict(given)], "the inputs given to this run (no --calibration given)"
    return seeded_inputs(graph), (
        f"{SEEDED_INPUTS} seeded standard-normal inputs (no --calibration given)"
    )


def is_saved(path: str | Path) -> bool:
    """Whether `path` is a folder written by `save` (a model compiled for the accelerator)."""
    return HybridModule.saved_target(path) == "vta"


def save(compiled: Compiled, folder: str | Path) -> None:
    compiled.save(folder)


def compile_vta(
    model: str | Path,
    config: str | None = None,
    calibration: str | None = None,
    db: str | None = None,
    candidates: int = 8,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    given: Mapping[str, np.ndarray] | None = None,
    print_passes: bool = False,
    log: Callable[[str], None] | None = None,
    host_target: str = "llvm",
) -> Compiled:
    """The model (an .onnx file, or a folder from `save`) quantized and compiled for the
    accelerator configuration `config` (a preset name or file; None: the default), calibrated
    as `calibration_inputs` says (`given`: the inputs of the run it is compiled for), its CPU
    layers for `host_target` (default: this machine; `board_target`: the board's CPU); `log`
    gets the import's notes (an opset upgrade)."""
    if is_saved(model):
        return HybridModule.load(model)
    cfg = VTAConfig.load(config)
    start = time.perf_counter()
    graph = fused_graph(model, dict(shapes or {}), print_passes, log)
    imported = time.perf_counter() - start
    feeds, text = calibration_inputs(graph, calibration, given)
    module, _ = compile_for_accelerator(graph, cfg, feeds, db, candidates,
                                        print_passes=print_passes,
                                        host_target=host_target)  # fmt: skip
    module.compile_times["import and graph passes"] += imported
    module.compile_seconds += imported
    module.calibration = f"{text}, least-mean-square-error exponents"
    return module


def board_target(config: str | None, host_target: str | None) -> str:
    """The target `vta compile --target vta` compiles the CPU layers for: `host_target`
    ("native": this machine), else the CPU of the board a configuration given by name or file
    is built for (`hw.bitstream.board_cpu_target`: a PYNQ's Cortex-A9), else this machine
    (no configuration given, or one of no board: the model runs here, on the simulators)."""
    if host_target:
        return "llvm" if host_target == "native" else host_target
    if config is None:
        return "llvm"
    from hw.bitstream import board_cpu_target

    return board_cpu_target(VTAConfig.load(config)) or "llvm"


def tune_vta(
    model: str | Path,
    n_trial: int,
    db: str | None,
    device: str = "sim",
    check: bool = False,
    tuner: str = "xgb",
    seed: int = 0,
    build_timeout: float = 30.0,
    log: Callable[[str], None] = print,
    config: str | VTAConfig | None = None,
) -> list[tuple[Task, tuple, int, TuningHistory]]:
    """Tune the network's conv2d_fused tasks (`hybrid.tuning_tasks`: the structure of each
    accelerator group, which its calibration does not change) for the accelerator `config` on
    `device` (cycles from the timing-only simulator on sim unless `check`), recording to `db`
    (needed: `compile_vta(..., db=...)` uses the records of its configuration); `log` gets the
    plan before tuning. Returns (task, template arguments, groups using it, history) per task."""
    from ..tune import tune_tasks
    from ..tune.database import Database
    from ..tune.measure import DeviceRunner, LocalBuilder, measure_option
    from ..tune.task import create_task
    from ..vta.environment import vta_target

    if not db:
        raise CompilerError("tuning a model needs --db FILE (its records make the compiled model)")
    cfg = VTAConfig.load(config)
    graph = partition(fused_graph(model), cfg)
    found = tuning_tasks(quantize(graph, calibrate(graph, seeded_inputs(graph))), cfg)
    # the XGBoost tuner's loop-nest features need a schedule; these tasks are Programs, so the
    # learned model ranks their knobs instead
    tuner = "xgb-knob" if tuner == "xgb" else tuner
    log(f"{model}: {len(found)} conv2d_fused tasks for {sum(w for _, w in found)} layers "
        f"(tuner {tuner})")  # fmt: skip
    tasks = [create_task("conv2d_fused", a, vta_target(cfg)) for a, _ in found]
    runner = DeviceRunner(device, check=check or device != "sim")
    option = measure_option(LocalBuilder(timeout=build_timeout), runner)
    try:
        with Database(db) as records:
            histories = tune_tasks(tasks, n_trial, option, tuner=tuner, database=records,
                                   seed=seed)  # fmt: skip
    finally:
        option.close()
    return [(t, a, w, h) for t, (a, w), h in zip(tasks, found, histories, strict=True)]


__all__ = [
    "Compiled",
    "board_latency_ms",
    "board_target",
    "calibration_inputs",
    "compile_vta",
    "is_saved",
    "run_vta",
    "save",
    "seeded_inputs",
    "tune_vta",
]
