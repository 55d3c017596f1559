"""Tuned CPU kernels against their peers in the same run (issue 6, section 9): the xgb-rank
tuned float32 matmul 1024^3 against numpy with OpenBLAS's AVX-512 kernel (1 and 2 threads) and
the tuned ResNet-18 conv2d_NCHWc layers against a one-node onnxruntime Conv (2 threads), timed
with scripts/bench_cpu.py's protocol. Used by scripts/bench_tuner.py; also runs alone.

    .venv/bin/python scripts/bench_tuned.py --layers C9 --trials 32 --json /tmp/bt/peers.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import compiler.tune.templates  # noqa: F401 - registers the templates
from compiler.tune import CPURunner, LocalBuilder, create_task, measure_option, tune
from compiler.tune.measure import compiler_build
from compiler.tune.templates.resnet18 import LAYERS, resnet18_task_args


def retime(task, config, threads: int, reps: int = 20) -> list[float]:
    """Seconds per call of one config, rebuilt here and timed as bench_cpu times its kernels."""
    from bench_cpu import timeit

    from compiler.runtime import set_num_threads
    from compiler.tune.measure import random_arrays

    kernel = compiler_build(task, task.instantiate(config))
    specs = list(kernel.arg_specs)
    arrays = random_arrays(specs[: len(specs) - kernel.n_outputs])
    arrays += [np.zeros(shape, dtype) for shape, dtype in specs[len(arrays) :]]
    set_num_threads(threads)
    return timeit(kernel, tuple(arrays), reps, 0.2)


def peers(matmul_trials: int, conv_layers: list[str], conv_trials: int, seed: int) -> dict:
    """Tuned (xgb-rank) matmul 1024^3 vs numpy AVX-512 and conv layers vs onnxruntime, 2 threads
    (matmul also 1 thread); ratio = peer time / ours (best of the repeats)."""
    from bench_cpu import ForeignLoad, conv_model, numpy_matmul, ort_session, timeit

    option = measure_option(LocalBuilder(timeout=30, n_parallel=2), CPURunner(min_repeat_ms=10))
    out: dict = {"matmul": {}, "conv2d": {}}
    try:
        task = create_task("matmul", (1024, 1024, 1024), "llvm")
        best = tune(task, matmul_trials, option, progress=False, seed=seed, batch_size=8)
        out["matmul_config"] = best.best_config.to_json()
        for th in (1, 2):
            with ForeignLoad() as load:
                ours = min(retime(task, best.best_config, th))
                numpy = numpy_matmul(1024, th, unset=True, reps=20)
            out["matmul"][th] = {
                "ours_gflops": task.flop / ours / 1e9,
                "numpy_avx512_gflops": numpy["gflops_best"],
                "kernel": numpy["kernel"],
                "ratio": numpy["best_ms"] / 1e3 / ours,
                "foreign_cores": load.cores,
            }
        rng = np.random.default_rng(0)
        for layer in conv_layers:
            c, size, f, k, stride = LAYERS[layer]
            op, args = resnet18_task_args(layer, "llvm")
            task = create_task(op, args, "llvm")
            best = tune(task, conv_trials, option, progress=False, seed=seed, batch_size=8)
            x = rng.standard_normal((1, c, size, size)).astype(np.float32)
            w = rng.standard_normal((f, c, k, k)).astype(np.float32)
            sess = ort_session(conv_model(c, f, size, k, stride, w), 2)
            with ForeignLoad() as load:
                ours = min(retime(task, best.best_config, 2))
                ort = min(timeit(sess.run, (None, {"x": x}), 20, 0.2))
            out["conv2d"][layer] = {
                "ours_gflops": task.flop / ours / 1e9,
                "ort_gflops": task.flop / ort / 1e9,
                "ratio": ort / ours,
                "foreign_cores": load.cores,
            }
        ratios = [r["ratio"] for r in out["conv2d"].values()]
        out["conv2d_geomean"] = float(np.exp(np.mean(np.log(ratios)))) if ratios else None
    finally:
        option.close()
    return out


def print_peers(pr: dict) -> None:
    print(f"tuned matmul 1024^3 ({pr['matmul_config']}) vs numpy, OpenBLAS AVX-512")
    for th, r in pr["matmul"].items():
        print(
            f"  {th} thread(s): ours {r['ours_gflops']:.1f} GFLOPS, numpy {r['kernel']} "
            f"{r['numpy_avx512_gflops']:.1f}: {r['ratio']:.2f}x (foreign {r['foreign_cores']:.2f})"
        )
    print("tuned conv2d_NCHWc vs onnxruntime, 2 threads (best of 20 calls)")
    for layer, r in pr["conv2d"].items():
        print(
            f"  {layer:4} ours {r['ours_gflops']:6.1f} GFLOPS, ORT {r['ort_gflops']:6.1f}: "
            f"{r['ratio']:.2f}x (foreign {r['foreign_cores']:.2f})"
        )
    if pr["conv2d_geomean"] is not None:
        print(f"  geomean {pr['conv2d_geomean']:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", nargs="*", default=list(LAYERS), help="ResNet-18 layers C1-C12")
    p.add_argument("--trials", type=int, default=100, help="xgb-rank trials per conv layer")
    p.add_argument("--matmul-trials", type=int, default=200)
    p.add_argument("--json", help="write the figures as JSON to this file")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    report = peers(args.matmul_trials, args.layers, args.trials, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(report))
    print_peers(report)


if __name__ == "__main__":
    main()
