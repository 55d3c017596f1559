"""Tuner component study (issue 6, section 9): best-so-far curves of xgb-rank, xgb-reg, random
and genetic search on ResNet-18 layers, on the CPU (wall time) and the accelerator (simulator
cycles); trials each needs to reach 95% of the best any found; transfer from other layers'
records; program-feature throughput; the tuned CPU matmul 1024^3 against numpy (OpenBLAS
AVX-512 kernel) and tuned conv2d layers against onnxruntime, timed with scripts/bench_cpu.py's
protocol. Tables on stdout; --json PATH writes the same figures, with the PNG curves beside it.

    .venv/bin/python scripts/bench_tuner.py --quick --json /tmp/bt/quick.json   # < 10 min
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_tuned import peers, print_peers

import compiler.tune.templates  # noqa: F401 - registers the templates
from compiler.tune import (
    CPURunner,
    Database,
    DeviceRunner,
    Featurizer,
    LocalBuilder,
    create_task,
    measure_option,
    plot_tuning_curve,
    tune,
)
from compiler.tune.templates.resnet18 import LAYERS, resnet18_task_args

TUNERS = ("xgb-rank", "xgb-reg", "random", "ga")


def trials_to_reach(curve: list[float], mark: float) -> int | None:
    """1-based trial at which the best-so-far first reaches `mark` (None if never)."""
    hit = np.flatnonzero(np.maximum.accumulate(np.asarray(curve)) >= mark)
    return int(hit[0]) + 1 if hit.size else None


def feature_rate(repeats: int = 20) -> float:
    """Program-feature rows per second on the CPU conv2d template (C6), loop structures already
    learned: the whole space is featurized `repeats` times with the per-config cache cleared."""
    op, args = resnet18_task_args("C6", "llvm")
    task = create_task(op, args, "llvm")
    featurize = Featurizer(task)
    space = task.config_space
    index = space.sample(np.random.default_rng(0), space.range_length)  # every valid config
    featurize(index)  # learn every loop structure once
    start = time.perf_counter()
    for _ in range(repeats):
        featurize._cache.clear()
        featurize(index)
    return repeats * len(index) / (time.perf_counter() - start)


def option_for(target: str):
    if target == "vta":
        return measure_option(
            LocalBuilder(timeout=60, n_parallel=2), DeviceRunner("sim", n_parallel=2)
        )
    return measure_option(LocalBuilder(timeout=30, n_parallel=2), CPURunner(min_repeat_ms=10))


def study(target: str, layer: str, n_trial: int, batch: int, option, seed: int) -> dict:
    op, args = resnet18_task_args(layer, target)
    task = create_task(op, args, target)
    curves, seconds = {}, {}
    for name in TUNERS:
        start = time.perf_counter()
        history = tune(
            task, n_trial, option, tuner=name, progress=False, seed=seed, batch_size=batch
        )
        curves[name] = history.throughputs
        seconds[name] = time.perf_counter() - start
    best = max(max(c) for c in curves.values())
    return {
        "target": target,
        "layer": layer,
        "unit": "GFLOPS" if target == "llvm" else "ops/cycle",
        "scale": 1e9 if target == "llvm" else 1.0,
        "best": {k: max(c) for k, c in curves.items()},
        "trials_to_95": {k: trials_to_reach(c, 0.95 * best) for k, c in curves.items()},
        "seconds": seconds,
        "curves": curves,
    }


def transfer_study(
    target: str, sources: list[str], layer: str, n_trial: int, batch: int, option, seed: int
) -> dict:
    """Trials xgb-rank needs to reach 95% of the best with and without the sources' records."""
    db = Database()
    for src in sources:
        op, args = resnet18_task_args(src, target)
        tune(
            create_task(op, args, target),
            n_trial,
            option,
            tuner="random",
            database=db,
            progress=False,
            seed=seed,
            batch_size=batch,
        )
    op, args = resnet18_task_args(layer, target)
    task = create_task(op, args, target)
    plain = tune(
        task, n_trial, option, tuner="xgb-rank", progress=False, seed=seed, batch_size=batch
    ).throughputs
    warm = tune(
        task,
        n_trial,
        option,
        tuner="xgb-rank",
        database=db,
        transfer=True,
        progress=False,
        seed=seed,
        batch_size=batch,
    ).throughputs[-n_trial:]
    best = max(max(plain), max(warm))
    return {
        "target": target,
        "sources": sources,
        "layer": layer,
        "trials_to_95": {
            "plain": trials_to_reach(plain, 0.95 * best),
            "transfer": trials_to_reach(warm, 0.95 * best),
        },
        "curves": {"xgb-rank": plain, "xgb-rank+transfer": warm},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one layer, few trials (< 10 min)")
    p.add_argument("--json", help="write the figures as JSON to this file (PNGs beside it)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    out = Path(args.json).parent if args.json else Path(tempfile.mkdtemp(prefix="bench_tuner_"))
    out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        plan = {"llvm": (["C9"], 32, 8), "vta": (["C9"], 16, 8)}
        transfer = ("vta", ["C6"], "C9", 16, 8)
        peer_plan = (32, ["C9"], 32)
    else:
        plan = {"llvm": (["C2", "C6", "C9"], 400, 64), "vta": (["C2", "C6", "C9"], 400, 64)}
        transfer = ("vta", ["C2", "C3", "C4", "C5", "C6"], "C9", 200, 32)
        peer_plan = (200, list(LAYERS), 100)

    report: dict = {"feature_rate": feature_rate(), "studies": [], "transfer": None}
    for target, (layers, n_trial, batch) in plan.items():
        option = option_for(target)
        try:
            for layer in layers:
                r = study(target, layer, n_trial, batch, option, args.seed)
                report["studies"].append(r)
                plot_tuning_curve(
                    {k: np.asarray(v) / r["scale"] for k, v in r["curves"].items()},
                    out / f"{target}_{layer}.png",
                    title=f"{layer} on {target}",
                    ylabel=f"best {r['unit']}",
                )
        finally:
            option.close()
    target, sources, layer, n_trial, batch = transfer
    option = option_for(target)
    try:
        report["transfer"] = transfer_study(
            target, sources, layer, n_trial, batch, option, args.seed
        )
    finally:
        option.close()

    report["peers"] = peers(*peer_plan, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(report))
    print(f"program features: {report['feature_rate']:,.0f} configs/s (conv2d C6, one core)")
    print(f"\n{'target':6} {'layer':5} {'tuner':9} {'best':>10} {'unit':9} {'to 95%':>7} {'s':>6}")
    for r in report["studies"]:
        for k in TUNERS:
            t95 = r["trials_to_95"][k]
            print(
                f"{r['target']:6} {r['layer']:5} {k:9} {r['best'][k] / r['scale']:10.2f} "
                f"{r['unit']:9} {t95 if t95 else '-':>7} {r['seconds'][k]:6.0f}"
            )
    t = report["transfer"]
    print(
        f"\ntransfer {'+'.join(t['sources'])} -> {t['layer']} on {t['target']}: trials to 95% "
        f"without {t['trials_to_95']['plain']}, with {t['trials_to_95']['transfer']}"
    )
    print()
    print_peers(report["peers"])
    print(f"curves in {out}")


if __name__ == "__main__":
    main()
