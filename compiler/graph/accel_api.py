"""ONNX models on the accelerator, the entry points `vta compile/run/tune MODEL.onnx --target
vta` call (plain arguments): import, calibrate, quantize and compile a model (`accel_onnx`),
save and load it (`accel_store`), run it on a device against the bit-exact reference with a
per-layer report, and tune its conv2d_fused tasks. The rest of the toolkit reaches the
accelerator path through this module only."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vta.config import VTAConfig

from ..errors import CompilerError
from . import accel_onnx as A
from . import accel_store
from .accel import plot_roofline, roofline_side

if TYPE_CHECKING:
    from ..tune.task import Task
    from ..tune.tuner import TuningHistory

CALIBRATION_INPUTS = 4
Compiled = A.Compiled


def calibration_inputs(net: A.Network, calibration: str | None) -> tuple[np.ndarray, str]:
    """The calibration batch for `net` (the .npz file `calibration` holds it by input name, or
    `CALIBRATION_INPUTS` seeded standard-normal inputs) and a description of it."""
    from vta.program_file import read_arrays

    if calibration:
        arrays = read_arrays(calibration, what="--calibration")
        if net.input not in arrays:
            raise CompilerError(f"--calibration {calibration}: no array '{net.input}'")
        x = arrays[net.input].astype(np.float32)
        if x.shape[1:] != net.input_shape[1:]:
            raise CompilerError(
                f"--calibration {calibration}: '{net.input}' has shape {list(x.shape)}; "
                f"expected [N, {', '.join(map(str, net.input_shape[1:]))}]"
            )
        return x, f"{calibration} ({x.shape[0]} inputs)"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((CALIBRATION_INPUTS, *net.input_shape[1:])).astype(np.float32)
    return x, f"{CALIBRATION_INPUTS} seeded standard-normal inputs (no --calibration given)"


def is_saved(path: str | Path) -> bool:
    """Whether `path` is a folder written by `save` (a model compiled for the accelerator)."""
    return accel_store.is_saved(path)


def save(compiled: Compiled, folder: str | Path) -> None:
    accel_store.save(compiled, folder)


def compile_vta(
    model: str | Path,
    config: str | None = None,
    calibration: str | None = None,
    db: str | None = None,
    candidates: int = 8,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> Compiled:
    """The model (an .onnx file, or a folder from `save`) quantized and compiled for the
    accelerator configuration `config` (a preset name or file; None: the default); its fp32
    network is `None` for a folder."""
    if accel_store.is_saved(model):
        return accel_store.load(model)
    net = A.import_network(model, dict(shapes or {}))
    calib, calib_text = calibration_inputs(net, calibration)
    qn = A.quantize_network(net, calib)
    qn.calibration = f"{calib_text}, least-mean-square-error exponents"
    return A.compile_network(qn, VTAConfig.load(config), candidates, db)


def run_vta(
    compiled: Compiled,
    inputs: Mapping[str, np.ndarray],
    device: str = "sim",
    model: str = "",
    plot: str | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Run the compiled model on `device` and its reference (the same CPU kernels, the
    offloaded layers in numpy); returns the report (per-layer rows: where each ran and why,
    cycles, GEMM utilization, DRAM bytes, roofline side; totals; `bit_exact`: the device
    matched the reference bit for bit; `output_error` against fp32) and the dequantized
    outputs by name. `plot` writes the layers' roofline plot."""
    qn, cfg = compiled.qn, compiled.cfg
    net = qn.net
    if set(inputs) != {net.input}:
        raise CompilerError(f"--inputs: give exactly '{net.input}', got {sorted(inputs)}")
    x = inputs[net.input].astype(np.float32)
    if x.shape != net.input_shape:
        raise CompilerError(f"--inputs: '{net.input}' has shape {list(x.shape)}, expected "
                            f"{list(net.input_shape)}")  # fmt: skip
    # the reference first: the same CPU kernels, the offloaded layers in numpy; it also takes
    # the CPU kernels' first-call costs (page faults, waking the thread pool), so the device
    # run's CPU rows report their steady time
    ref = A.run(compiled, x)[0]
    start = time.perf_counter()
    acts, rows, cpu = A.run(compiled, x, device)
    wall = time.perf_counter() - start
    exact = np.array_equal(acts[net.output], ref[net.output])
    out = A.dequantized_output(qn, acts)
    error = None
    if all(ly.weight is not None for ly in net.layers if ly.kind in ("conv", "dwconv", "dense")):
        f32 = A.forward_f32(net, x)[net.output]
        error = float(np.abs(out - f32).max() / max(np.abs(f32).max(), 1e-30))
    for r in rows:
        if r["where"] == "vta":
            r["bound"] = roofline_side(r["intensity"], cfg)
    cycles = None if device == "fsim" else sum(r.get("cycles") or 0 for r in rows)
    report = {
        "model": str(model),
        "config": cfg.name,
        "device": device,
        "calibration": qn.calibration,
        "cycles": cycles,
        "layers": rows,
        "cpu_seconds": cpu,
        "run_seconds": wall,
        "compile_seconds": compiled.compile_seconds,
        "bit_exact": bool(exact),
        "output_error": error,
    }
    if plot:
        plot_roofline(rows, cfg, plot, Path(model).stem)
    return report, {net.output: out}


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
) -> list[tuple[Task, tuple, int, TuningHistory]]:
    """Tune the network's conv2d_fused tasks (quantized with the default calibration, as
    `compile_vta` without one) on `device` (cycles from the timing-only simulator on sim unless
    `check`), recording to `db` (needed: `compile_vta(..., db=...)` uses the records); `log`
    gets the plan before tuning. Returns (task, template arguments, layers using it, history)
    per task."""
    from ..tune import tune_tasks
    from ..tune.database import Database
    from ..tune.measure import DeviceRunner, LocalBuilder, measure_option
    from ..tune.task import create_task

    if not db:
        raise CompilerError("tuning a model needs --db FILE (its records make the compiled model)")
    net = A.import_network(model)
    qn = A.quantize_network(net, calibration_inputs(net, None)[0])
    found = A.tuning_tasks(qn, VTAConfig.load(None))
    # the XGBoost tuner's loop-nest features need a schedule; these tasks are Programs, so the
    # learned model ranks their knobs instead
    tuner = "xgb-knob" if tuner == "xgb" else tuner
    log(f"{model}: {len(found)} conv2d_fused tasks for {sum(w for _, w in found)} layers "
        f"(tuner {tuner})")  # fmt: skip
    tasks = [create_task("conv2d_fused", a, "vta") for a, _ in found]
    runner = DeviceRunner(device, check=check or device != "sim")
    option = measure_option(LocalBuilder(timeout=build_timeout), runner)
    try:
        with Database(db) as records:
            histories = tune_tasks(tasks, n_trial, option, tuner=tuner, database=records,
                                   seed=seed)  # fmt: skip
    finally:
        option.close()
    return [(t, a, w, h) for t, (a, w), h in zip(tasks, found, histories, strict=True)]
