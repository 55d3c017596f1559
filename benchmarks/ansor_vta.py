"""The auto-scheduler against the template tuner on the accelerator (`scripts/bench_ansor.py
--vta`): ResNet-18's C2-C12 as `conv2d_packed` tasks, both searched for the same trials in
batches of the same size from the same seed, each candidate's cycles on the timing-only
simulator (`sim` without data, the template tuner's measurement), beside the template's
default tiling (`conv2d.default_knobs`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.autoschedule import AnsorTuner, SearchTask
from compiler.topi.vta.conv2d import RESNET18, conv2d_from_workload, schedule_conv2d_packed
from compiler.tune import tune
from compiler.tune.templates.vta import CLIP, SHIFT
from compiler.tune.workloads import workload_measure_option, workload_task
from compiler.tune.xgb_tuner import XGBTuner
from compiler.vta import build
from vta.device import get_device

BATCH = 8  # candidates per batch, both tuners (the cost models fit from 16 measurements)


def default_cycles(layer: str) -> int:
    """Cycles of the template's default tiling of a layer on the timing-only simulator."""
    args, out = conv2d_from_workload(RESNET18[layer], shift=SHIFT, clip=CLIP)
    program = build(schedule_conv2d_packed(out), [*args, out]).program
    return int(get_device("sim").time(program).cycles)


def _cycles_at(flop: float, curve: np.ndarray, trials: Sequence[int]) -> dict[int, int]:
    """Best cycles after each trial count (from a best-throughput curve in ops per cycle)."""
    return {n: int(round(flop / curve[:n].max())) for n in trials}


def bench_layer(layer: str, trials: Sequence[int], seed: int = 0) -> dict[str, Any]:
    """One layer: each tuner's best cycles after each trial count, and the default's."""
    n = max(trials)
    args = RESNET18[layer].sizes
    option = workload_measure_option("vta")
    try:
        stask = SearchTask("conv2d_packed", args, "vta")
        ansor = AnsorTuner(stask, seed=seed)
        tune(stask, n, option, ansor, progress=False, batch_size=BATCH)  # type: ignore[arg-type]
        ttask = workload_task("conv2d_packed", args, "vta")
        xgb = XGBTuner(ttask, loss="rank", seed=seed)
        tune(ttask, n, option, xgb, progress=False, batch_size=BATCH)
    finally:
        option.close()
    print(f"#   {layer}: {n} trials each", file=sys.stderr, flush=True)
    return {
        "layer": layer,
        "workload": stask.workload_key,
        "ansor": _cycles_at(stask.flop, ansor.history.best_curve(), trials),
        "template": _cycles_at(ttask.flop, xgb.history.best_curve(), trials),
        "default": default_cycles(layer),
        "errors": {"ansor": ansor.history.errors, "template": xgb.history.errors},
        "best_program": str(ansor.history.best_config),
    }


def run_vta(layers: Sequence[str], trials: Sequence[int], seed: int = 0) -> dict[str, Any]:
    return {
        "device": "sim (timing only)",
        "batch": BATCH,
        "seed": seed,
        "trials": list(trials),
        "layers": [bench_layer(layer, trials, seed) for layer in layers],
    }


def print_vta(result: dict[str, Any]) -> None:
    """The table: per layer and trial count, both tuners' best cycles and their ratio."""
    print(
        f"# accelerator conv2d_packed, cycles on {result['device']}, batches of "
        f"{result['batch']}, seed {result['seed']}; ratio = auto-scheduler / template tuner"
    )
    print(f"{'layer':6} {'trials':>6} {'default':>9} {'template':>9} {'ansor':>9} {'ratio':>6}")
    for row in result["layers"]:
        for n in result["trials"]:
            t, a = row["template"][n], row["ansor"][n]
            print(f"{row['layer']:6} {n:>6} {row['default']:>9} {t:>9} {a:>9} {a / t:>6.3f}")
