"""How long a network takes to compile for the accelerator, stage by stage, against the CPU
path's compile of the same ONNX model in the same run (`scripts/bench_vta.py --compile`).

Both start from the ONNX file in a process that has imported the toolkit and onnx (import
time is the interpreter's, paid once per process, and printed apart); every repeat is cold:
the accelerator's knob choices and Programs cached in the process are forgotten first, and
the two paths take turns so both see the same moments of this shared machine. The
accelerator compile calibrates on one input, as `vta run` does on the input it is given.
Goal: ResNet-18 in <= 2.5 s.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from compiler import zoo
from compiler.graph import accel
from compiler.graph.build_onnx import compile_model
from compiler.graph.hybrid import compile_for_accelerator
from vta.config import VTAConfig

GOAL_SECONDS = 2.5


def _import_seconds() -> float:
    start = time.perf_counter()
    import onnx  # noqa: F401 - the importer's first call imports it

    return time.perf_counter() - start


def bench_compile(model: str, repeat: int = 3, config: str | None = None) -> dict:
    """Median seconds per stage of the accelerator compile, and of the CPU compile, over
    `repeat` alternating cold runs."""
    cfg = VTAConfig.load(config)
    onnx_import = _import_seconds()
    feeds = [zoo.random_inputs(model, 1)]
    stages: dict[str, list[float]] = {}
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{model}.onnx"
        path.write_bytes(zoo.NETWORKS[model]())
        compile_for_accelerator(path, cfg, feeds)  # warms LLVM's targets and the imports
        for _ in range(repeat):
            accel.clear_caches()
            module, _ = compile_for_accelerator(path, cfg, feeds)
            for stage, seconds in {**module.compile_times, "total": module.compile_seconds}.items():
                stages.setdefault(stage, []).append(seconds)
            start = time.perf_counter()
            compile_model(path, "llvm")
            cpu.append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in stages.items()}
    cpu_median = statistics.median(cpu)
    return {
        "model": model,
        "config": cfg.name,
        "repeat": repeat,
        "onnx_import_seconds": onnx_import,
        "stages": medians,
        "vta_seconds": medians["total"],
        "vta_runs": stages["total"],
        "cpu_seconds": cpu_median,
        "cpu_runs": cpu,
        "ratio_vta_to_cpu": medians["total"] / cpu_median,
        "goal_seconds": GOAL_SECONDS if model == "resnet18" else None,
    }


def print_compile(rows: list[dict]) -> None:
    for r in rows:
        print(
            f"{r['model']} ({r['config']}), median of {r['repeat']} cold compiles "
            f"(onnx's import {r['onnx_import_seconds']:.2f} s, once per process, apart):"
        )
        for stage, seconds in r["stages"].items():
            print(f"  {stage:34} {seconds:6.2f} s")
        print(
            f"  {'CPU path (llvm)':34} {r['cpu_seconds']:6.2f} s   accelerator / CPU "
            f"{r['ratio_vta_to_cpu']:.2f}x"
        )
        if r["goal_seconds"]:
            met = "met" if r["vta_seconds"] <= r["goal_seconds"] else "NOT met"
            print(
                f"  goal <= {r['goal_seconds']} s: {met} "
                f"(runs: {', '.join(f'{s:.2f}' for s in r['vta_runs'])})"
            )
