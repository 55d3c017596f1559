"""The auto-scheduler against the template tuner, numpy and MetaSchedule (scripts/bench_ansor.py).

Operators: matmul 512^3 and 1024^3 (template `matmul`, numpy peer), ResNet-18's 3x3 stride-1
convolutions C2, C6, C9, C12 in NCHW16c (template `conv2d_NCHWc` with the same blocks), a
depthwise conv and a softmax (no template: the peer is the hand-written x86 schedule). Each
tuner runs `max(trials)` measurements, the two in turn batch by batch (the host's speed drifts
over minutes); a tuner's figure at N trials is its best throughput among its first N. Every
kernel runs with `threads` threads (default: the thread pool's size, as a compiled network's
kernels run), numpy's BLAS too, and MetaSchedule (an interpreter with apache-tvm) tunes matmul
512^3 and C9, written as ours are, with the same thread count and the smallest trial count.

The network part tunes ResNet-18's fused convolution groups (the tasks of `vta tune MODEL
--tuner ansor`) with a budget of 20 trials per task, with the gradient task scheduler and round
robin in turn, unit by unit; the figure is the estimated latency sum(weight x best task
latency).
The search-cost part times the proposal step of one batch (64) against its measurement.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.autoschedule import AnsorTuner, SearchTask
from compiler.autoschedule.task_scheduler import ScheduleResult, TaskScheduler, network_tasks
from compiler.codegen.target import Target
from compiler.graph.tasks import describe, group_similarity, group_tasks
from compiler.topi import x86
from compiler.tune import CPURunner, LocalBuilder, XGBTuner, create_task, measure_option, tune
from compiler.tune.host import host_of
from compiler.tune.measure import compiler_build, time_kernel
from compiler.tune.templates import cpu  # noqa: F401 - registers the CPU templates

from .harness import alternate, pooled, round_ratio, source_version, utc_now
from .hostisa import hidden
from .peers import NumpyMatmul, numpy_matmul

BN = 16  # channel block of the conv layers (one AVX-512 vector of float32)
LAYERS = {"C2": (64, 56), "C6": (128, 28), "C9": (256, 14), "C12": (512, 7)}
OPERATORS: dict[str, tuple[str, tuple]] = {
    "matmul512": ("matmul", (512, 512, 512)),
    "matmul1024": ("matmul", (1024, 1024, 1024)),
    **{n: ("conv2d_NCHWc", (c, s, s, c, 3, 3, 1, BN, BN)) for n, (c, s) in LAYERS.items()},
    "depthwise": ("depthwise_conv2d_nchw", (256, 28, 28, 3)),
    "softmax": ("softmax", (256, 1024)),
}
TEMPLATES = {"matmul", "conv2d_NCHWc"}  # workloads the template tuner has a template for
BATCH = 32
RETIME_ROUNDS = 5  # rounds in which the sides' best kernels are timed again in turn
SEARCH_BATCH = 64  # the batch the search-cost figure times


def _option(threads: int):
    return measure_option(LocalBuilder(timeout=60), CPURunner(threads=threads, repeat=5))


def _curve_at(curve: np.ndarray, trials: Sequence[int]) -> dict[int, float]:
    return {n: float(curve[:n].max()) / 1e9 if len(curve) else 0.0 for n in trials}


def hand_written_kernel(task: SearchTask) -> Any:
    """The hand-written x86 schedule of a workload without a template, built."""
    out = task.outputs[0]
    s = (x86.schedule_softmax if task.name == "softmax" else x86.schedule_depthwise_conv2d_nchw)(
        out
    )
    return compiler_build(task, (s, task.tensors))  # type: ignore[arg-type]


def default_schedule_gflops(name: str, args: tuple, threads: int) -> float:
    """GFLOPS of the hand-written x86 schedule of a workload without a template."""
    task = SearchTask(name, args)
    kernel = hand_written_kernel(task)
    costs = time_kernel(kernel, task, True, 1e-3, 1, 10, 5.0, 1, threads)  # type: ignore[arg-type]
    return task.flop / min(costs) / 1e9


def bench_operator(key: str, trials: Sequence[int], threads: int, seed: int = 0) -> dict[str, Any]:
    """One operator: the auto-scheduler's and the template tuner's best at each trial count."""
    name, args = OPERATORS[key]
    n = max(trials)
    option = _option(threads)
    try:
        task = SearchTask(name, args)
        ansor = AnsorTuner(task, seed=seed)
        turns: list[tuple[Any, Any]] = [(ansor, task)]
        xgb = None
        if name in TEMPLATES:
            ttask = create_task(name, args, "llvm")
            xgb = XGBTuner(ttask, loss="rank", seed=seed)
            turns.append((xgb, ttask))
        ansor_wall = 0.0
        for k, done in enumerate(range(BATCH, n + BATCH, BATCH)):  # batch by batch, in turn
            for tuner, t in turns[:: 1 if k % 2 == 0 else -1]:
                start = time.perf_counter()
                tune(t, min(done, n), option, tuner, progress=False, batch_size=BATCH)
                if tuner is ansor:
                    ansor_wall += time.perf_counter() - start
            print(f"#   {key}: {min(done, n)}/{n} trials", file=sys.stderr, flush=True)
        row: dict[str, Any] = {
            "op": key,
            "workload": task.workload_key,
            "ansor": _curve_at(ansor.history.best_curve(), trials),
            "ansor_errors": ansor.history.errors,
            "search_s_per_batch": ansor.search_seconds / max(1, -(-n // BATCH)),
            "measure_s_per_batch": (ansor_wall - ansor.search_seconds) / max(1, -(-n // BATCH)),
            "best_program": str(ansor.history.best_config),
        }
        if xgb is not None:
            row["template"] = _curve_at(xgb.history.best_curve(), trials)
            row["peer"] = "template tuner (xgb)"
        else:
            value = default_schedule_gflops(name, args, threads)
            row["template"] = {t: value for t in trials}
            row["peer"] = "hand-written x86 schedule (no template)"
        if name == "matmul":
            row["numpy"] = numpy_matmul(args[0], threads, False, 20)["gflops_best"]
    finally:
        option.close()
    row["retimed"] = retime(task, ansor, xgb, trials, threads)
    return row


def _best_kernel(task: Any, tuner: Any, trials: int) -> Any:
    """A kernel of the tuner's fastest config among its first `trials` measurements (None if
    none ran)."""
    values = tuner.history.throughputs[:trials]
    if not values or max(values) <= 0:
        return None
    k = int(np.argmax(values))
    config = tuner.measured[k][0] if isinstance(tuner, AnsorTuner) else tuner.history.configs[k]
    return compiler_build(task, task.instantiate(config))


def retime(
    task: SearchTask, ansor: AnsorTuner, xgb: Any, trials: Sequence[int], threads: int
) -> dict[int, dict[str, float]]:
    """Each side's best kernel at each trial count timed again, the sides taking turns over
    RETIME_ROUNDS rounds (a slow spell of a shared machine then falls on every side): per side
    the GFLOPS of its fastest timing, and `ratio`, the median over rounds of the peer's median
    time over the auto-scheduler's in the same round. The peer is the template tuner's best,
    else the hand-written schedule; numpy joins on matmul."""
    out: dict[int, dict[str, float]] = {}
    for t in trials:
        kernels = {"ansor": _best_kernel(task, ansor, t)}
        if xgb is not None:
            kernels["template"] = _best_kernel(xgb.task, xgb, t)
        else:
            kernels["template"] = hand_written_kernel(task)
        if any(k is None for k in kernels.values()):
            continue
        timed = {
            side: (lambda k=k: time_kernel(k, task, False, 1e-3, 1, 5, 5.0, 1, threads))
            for side, k in kernels.items()
        }
        with contextlib.ExitStack() as stack:
            if task.name == "matmul":
                timed["numpy"] = stack.enter_context(NumpyMatmul(task.args[0], threads, False, 5))
            per_round = alternate(RETIME_ROUNDS, timed)
        out[t] = {side: task.flop / min(pooled(r)) / 1e9 for side, r in per_round.items()}
        out[t]["ratio"] = round_ratio(per_round["ansor"], per_round["template"])
        if "numpy" in per_round:
            out[t]["numpy_ratio"] = round_ratio(per_round["ansor"], per_round["numpy"])
    return out


def resnet18_pairs(winograd: bool = True) -> list[tuple[tuple[str, tuple], float]]:
    """ResNet-18's auto-scheduler tasks ((workload, args), weight): its fused convolution
    groups (`graph.tasks.group_tasks`, what `vta tune MODEL --tuner ansor` tunes);
    without the Winograd ones unless `winograd`."""
    from compiler.zoo import resnet18

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet18.onnx")
        Path(path).write_bytes(resnet18())
        pairs = [(w, float(n)) for w, n in group_tasks(path, "llvm")]
    return [p for p in pairs if winograd or "Winograd" not in group_similarity(p[0][1][0])]


def bench_scheduler(
    threads: int, per_task: int = 20, unit: int = 4, seed: int = 0, winograd: bool = True
) -> dict[str, Any]:
    """Gradient against round-robin task scheduling on ResNet-18's group tasks (`winograd`:
    with the Winograd groups, the slowest to lower, build and search). The two schedulers run
    unit by unit in turn (the host's speed drifts over minutes; a unit is seconds)."""
    pairs = resnet18_pairs(winograd)
    out: dict[str, Any] = {
        "tasks": len(pairs),
        "task_names": [describe(w[1][0]) for w, _ in pairs],
        "budget": per_task * len(pairs),
        "unit": unit,
        "winograd_groups": winograd,
    }
    option = _option(threads)
    try:
        scheds, results, wall = {}, {}, {}
        for strategy in ("gradient", "round-robin"):
            tasks, weights = network_tasks(pairs)
            scheds[strategy] = TaskScheduler(
                tasks,
                weights,
                option,
                strategy=strategy,
                unit=unit,
                seed=seed,
                similarity=[group_similarity(t.args[0]) for t in tasks],
            )
            results[strategy], wall[strategy] = ScheduleResult(), 0.0
        n_units = scheds["gradient"].n_units(per_task * len(pairs))
        for k in range(n_units):
            for strategy in list(scheds)[:: 1 if k % 2 == 0 else -1]:
                start = time.perf_counter()
                scheds[strategy].step(results[strategy])
                wall[strategy] += time.perf_counter() - start
                res = results[strategy]
                print(
                    f"#   unit {k + 1}/{n_units} {strategy}: {out['task_names'][res.tasks[-1]]}, "
                    f"estimate {res.latency[-1] * 1e3:.2f} ms ({wall[strategy]:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        option.close()
    for strategy, sched in scheds.items():
        res = results[strategy]
        out[strategy] = {
            "trials": res.trials,
            "latency_ms": [v * 1e3 for v in res.latency],
            "order": res.tasks,
            "units_per_task": np.bincount(res.tasks, minlength=len(pairs)).tolist(),
            "best_ms": [c * 1e3 for c in res.best_costs],
            "wall_s": wall[strategy],
            "search_s": sum(t.search_seconds for t in sched.tuners.values()),
        }
        print(
            f"# {strategy}: {wall[strategy]:.0f} s, final {out[strategy]['latency_ms'][-1]:.3f} ms",
            file=sys.stderr,
            flush=True,
        )
    rr_final = out["round-robin"]["latency_ms"][-1]
    g = out["gradient"]
    reach = next(
        (t for t, v in zip(g["trials"], g["latency_ms"], strict=True) if v <= rr_final), None
    )
    out["gradient_trials_to_rr_final"] = reach
    return out


COST_TASKS = {  # --search-cost's tasks: ResNet-18's groups by kind, an operator by its key
    "matmul512": "",
    "winograd": "Conv(3x3/1, Winograd)+Relu",
    "direct": "Conv(3x3/2)+Relu",
}


def search_cost(
    threads: int, keys: Sequence[str] = tuple(COST_TASKS), seed: int = 0, batch: int = SEARCH_BATCH
) -> list[dict[str, Any]]:
    """The proposal step against measurement, per batch of `batch`, on matmul 512^3 and on
    ResNet-18's first Winograd and first direct 3x3 group (`COST_TASKS`): two batches are
    tuned; the second (the first with a fitted model: generate, evolve, predict) is timed, its
    proposal apart from the rest (build, run and the model's refit)."""
    pairs = resnet18_pairs()
    kinds = [group_similarity(w[1][0]) for w, _ in pairs]
    rows = []
    for key in keys:
        name, args = OPERATORS[key] if key in OPERATORS else pairs[kinds.index(COST_TASKS[key])][0]
        task = SearchTask(name, args)
        tuner = AnsorTuner(task, seed=seed)
        option = _option(threads)
        try:
            tuner.tune(batch, option, batch_size=batch)
            before, start = tuner.search_seconds, time.perf_counter()
            tuner.tune(2 * batch, option, batch_size=batch)
            wall = time.perf_counter() - start
        finally:
            option.close()
        proposal = tuner.search_seconds - before
        rows.append(
            {"task": key, "batch": batch, "proposal_s": proposal, "measure_s": wall - proposal}
        )
        print(f"# search cost {key}: {wall:.0f} s", file=sys.stderr, flush=True)
    return rows


METASCHEDULE_PROBE = """
import json, sys, tempfile, time
import numpy as np
import tvm
from tvm import te, topi
try:
    from tvm.s_tir import meta_schedule as ms  # apache-tvm >= 0.22
except ImportError:
    from tvm import meta_schedule as ms
spec, trials, kind = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
dims = [int(v) for v in sys.argv[4:]]
if kind == "matmul":
    n, m, l = dims
    a = te.placeholder((n, l), "float32", "A"); b = te.placeholder((l, m), "float32", "B")
    k = te.reduce_axis((0, l), "k")
    out = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "C")
    ins, flop = [a, b], 2.0 * n * m * l
else:  # conv2d on NCHW[bn]c data and OIHW[bn]i[bn]o weights, padding kh // 2, as ours
    c, h, w, f, kh, kw, stride, bn = dims
    data = te.placeholder((1, c // bn, h, w, bn), "float32", "data")
    kernel = te.placeholder((f // bn, c // bn, kh, kw, bn, bn), "float32", "kernel")
    p = kh // 2
    pad = topi.nn.pad(data, (0, 0, p, p, 0), (0, 0, p, p, 0), name="pad")
    oh, ow = (h + 2 * p - kh) // stride + 1, (w + 2 * p - kw) // stride + 1
    ic, ry = te.reduce_axis((0, c), "ic"), te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    out = te.compute((1, f // bn, oh, ow, bn), lambda n_, o, y, x, ob: te.sum(
        pad[n_, ic // bn, y * stride + ry, x * stride + rx, ic % bn]
        * kernel[o, ic // bn, ry, rx, ic % bn, ob], axis=[ic, ry, rx]), "conv")
    ins, flop = [data, kernel], 2.0 * f * oh * ow * c * kh * kw
mod = tvm.IRModule({"main": te.create_prim_func([*ins, out])})
target = tvm.target.Target(spec)
start = time.perf_counter()
with tempfile.TemporaryDirectory() as work:
    # builds time out at 30 s by default, which a loaded 2-core machine can exceed
    db = ms.tir_integration.tune_tir(mod, target, work, max_trials_global=trials,
                                     num_trials_per_iter=32, seed=0,
                                     builder=ms.builder.LocalBuilder(timeout_sec=300))
    sch = ms.tir_integration.compile_tir(db, mod, target)
tuning = time.perf_counter() - start
f = tvm.compile(sch.mod, target=target)
dev = tvm.cpu()
args = [tvm.runtime.tensor(np.random.rand(*[int(d) for d in t.shape]).astype("float32"), dev)
        for t in [*ins, out]]
rt = getattr(f, "mod", f)  # tvm.compile returns an Executable in recent versions
t = rt.time_evaluator("main", dev, number=10, repeat=5)(*args)
print(json.dumps({"gflops": flop / min(t.results) / 1e9, "tuning_s": tuning,
                  "mcpu": spec["mcpu"], "tvm": tvm.__version__}))
"""
METASCHEDULE_OPS = ("matmul512", "C9")  # the operators MetaSchedule tunes beside ours


def metaschedule(python: str, key: str, trials: int, threads: int) -> dict[str, Any]:
    """MetaSchedule on operator `key` (matmul or conv2d_NCHWc) for `trials` trials with
    `threads` threads and our target's CPU and features (so AVX2 code where AVX-512 is
    hidden), in `python` (an interpreter with apache-tvm); {"error": why} when that is not
    available."""
    name, args = OPERATORS[key]
    dims = list(args[:3]) if name == "matmul" else [*args[:7], args[7]]
    # not preloaded with the AVX-512 hiding shim (tvm's import under it outlived a 10-minute
    # wait here): the target's features below keep its code to the instruction set we see
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env.update(TVM_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    host = Target.parse("llvm")  # ours: the CPU and its features as LLVM sees them here
    mattr = [f for f in host.features.split(",") if f]  # without AVX-512 where it is hidden
    spec = {"kind": "llvm", "mcpu": host.cpu, "mattr": mattr, "num-cores": threads}
    command = [python, "-c", METASCHEDULE_PROBE, json.dumps(spec), str(trials), name]
    try:
        out = subprocess.run(
            [*command, *map(str, dims)], capture_output=True, text=True, env=env, timeout=5400
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return {"error": str(err)}
    if out.returncode:
        lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
        return {"error": lines[-1] if lines else f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(
    ops: Sequence[str],
    trials: Sequence[int],
    scheduler: bool,
    tvm_python: str | None,
    threads: int,
    seed: int = 0,
    winograd: bool = True,
    cost: Sequence[str] = (),
    cost_batch: int = SEARCH_BATCH,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "source": source_version(),
        "started": utc_now(),
        "trials": list(trials),
        "threads": threads,
        "host": host_of("llvm"),
        "avx512_hidden": hidden(),
        "operators": [],
    }
    for key in ops:
        start = time.perf_counter()
        result["operators"].append(bench_operator(key, trials, threads, seed))
        print(f"# {key}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    if tvm_python is not None:
        result["metaschedule"] = []
        for row in result["operators"]:
            if row["op"] in METASCHEDULE_OPS:
                start = time.perf_counter()
                ms = metaschedule(tvm_python, row["op"], trials[0], threads)
                result["metaschedule"].append(
                    {"op": row["op"], "trials": trials[0], **ms, "ours": row["ansor"][trials[0]]}
                )
                print(
                    f"# MetaSchedule {row['op']}: {time.perf_counter() - start:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    if cost:
        result["search_cost"] = search_cost(threads, cost, seed, cost_batch)
    if scheduler:
        result["scheduler"] = bench_scheduler(threads, seed=seed, winograd=winograd)
    return result


def print_result(result: dict[str, Any]) -> None:
    trials = result["trials"]
    isa = (result.get("host") or {}).get("isa", "?")
    isa += " (AVX-512 hidden)" if result.get("avx512_hidden") else " (native)"
    head = " ".join(f"{'ansor@' + str(t):>10} {'peer@' + str(t):>10} {'ratio':>6}" for t in trials)
    per_numpy = " ".join(f"{'/numpy@' + str(t):>10}" for t in trials)
    print(f"{'operator':<11} {head} {'numpy':>7} {per_numpy}  peer")
    wins = dict.fromkeys(trials, 0)
    if not result["operators"]:
        print("(no operators)")
    for r in result["operators"]:
        cells = []
        for t in trials:
            a, p = r["ansor"][t], r["template"][t]
            cells.append(f"{a:>10.1f} {p:>10.1f} {a / p if p else float('inf'):>6.2f}")
            wins[t] += a >= p
        npy = r.get("numpy")
        tail = " ".join(f"{r['ansor'][t] / npy if npy else math.nan:>10.2f}" for t in trials)
        print(f"{r['op']:<11} {' '.join(cells)} {npy or math.nan:>7.1f} {tail}  {r['peer']}")
    if result["operators"]:
        counts = ", ".join(f"{wins[t]} at {t} trials" for t in trials)
        print(
            f"(GFLOPS, {result.get('threads')} threads, {isa}) ansor >= peer on {counts}, "
            f"of {len(result['operators'])}"
        )
    retimed = [r for r in result["operators"] if r.get("retimed")]
    if retimed:
        print(f"re-timed, the best kernels in turn over {RETIME_ROUNDS} rounds:")
        cols = " ".join(
            f"{'ansor@' + str(t):>10} {'peer':>7} {'ratio':>6} {'/numpy':>7}" for t in trials
        )
        print(f"{'operator':<11} {cols}")
        for r in retimed:
            cells = []
            for t in trials:
                m = r["retimed"].get(t) or r["retimed"].get(str(t))
                if m is None:
                    cells.append(f"{'-':>10} {'-':>7} {'-':>6} {'-':>7}")
                    continue
                npy = f"{m['numpy_ratio']:>7.2f}" if "numpy_ratio" in m else f"{'':>7}"
                cells.append(f"{m['ansor']:>10.1f} {m['template']:>7.1f} {m['ratio']:>6.2f} {npy}")
            print(f"{r['op']:<11} {' '.join(cells)}")
        for t in trials:
            got = [r["retimed"].get(t) or r["retimed"].get(str(t)) for r in retimed]
            wins = sum(m is not None and m["ratio"] >= 1.0 for m in got)
            print(
                f"(re-timed ratio: median over rounds) ansor >= peer at {t} trials on "
                f"{wins} of {len(got)}"
            )
    for r in result["operators"]:
        print(
            f"{r['op']:<11} search {r['search_s_per_batch']:.2f} s/batch of {BATCH}, "
            f"measurement {r['measure_s_per_batch']:.2f} s/batch"
        )
    for m in result.get("metaschedule", []):
        if "error" in m:
            print(f"MetaSchedule {m['op']}: not run ({m['error']})")
        else:
            print(
                f"MetaSchedule {m['op']} @{m['trials']}: {m['gflops']:.1f} GFLOPS in "
                f"{m['tuning_s']:.0f} s (apache-tvm {m['tvm']}, {m['mcpu']}); ours "
                f"{m['ours']:.1f} ({m['ours'] / m['gflops']:.2f}x)"
            )
    for r in result.get("search_cost", []):
        print(
            f"search cost {r['task']}: proposal {r['proposal_s']:.1f} s for a batch of "
            f"{r['batch']}, its measurement (build, run, refit) {r['measure_s']:.1f} s "
            f"({r['proposal_s'] / r['measure_s']:.2f}x)"
        )
    if "scheduler" in result:
        sc = result["scheduler"]
        g, rr = sc["gradient"], sc["round-robin"]
        which = "" if sc.get("winograd_groups", True) else " (no Winograd groups)"
        print(
            f"ResNet-18{which}, {sc['tasks']} tasks, {sc['budget']} trials: estimated latency "
            f"gradient {g['latency_ms'][-1]:.2f} ms, round robin {rr['latency_ms'][-1]:.2f} ms; "
            f"gradient reaches round robin's final after {sc['gradient_trials_to_rr_final']} "
            f"trials ({(sc['gradient_trials_to_rr_final'] or 0) / sc['budget']:.0%})"
        )
        for name in ("gradient", "round-robin"):
            print(
                f"  {name}: {sc[name]['wall_s']:.0f} s, of it proposing "
                f"{sc[name]['search_s']:.0f} s"
            )
        print(f"  {'task':<48} {'gradient':>16} {'round robin':>16}  (units, best ms)")
        for k, name in enumerate(sc["task_names"]):
            cells = [
                f"{sc[s]['units_per_task'][k]:>5} {sc[s]['best_ms'][k]:>10.3f}"
                for s in ("gradient", "round-robin")
            ]
            print(f"  {name:<48} {cells[0]:>16} {cells[1]:>16}")


def plot_scheduler(result: dict[str, Any], path: str) -> None:
    import matplotlib  # optional (the 'plot' extra)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sc = result["scheduler"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for strategy in ("gradient", "round-robin"):
        ax.plot(sc[strategy]["trials"], sc[strategy]["latency_ms"], label=strategy)
    ax.set_xlabel("trials")
    ax.set_ylabel("estimated latency of the conv groups (ms)")
    ax.set_title(f"ResNet-18 task scheduling ({sc['tasks']} tasks)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
