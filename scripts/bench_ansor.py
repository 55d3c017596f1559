"""The auto-scheduler (compiler.autoschedule) against the template tuner at the same trial
counts and thread count, numpy on matmul and MetaSchedule on matmul 512^3 and ResNet-18's C9
(when an interpreter with apache-tvm is given), and its task scheduler against round robin on
ResNet-18 (benchmarks.ansor).

    ./scripts/bench ansor --json /tmp/ansor.json --plot /tmp/sched.png
    ./scripts/bench ansor --no-scheduler --hide-avx512  # as on an AVX2-only host
    ./scripts/bench ansor --vta C2 C9 C12 --trials 16 32  # the accelerator (benchmarks.ansor_vta)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks import hostisa
from benchmarks.ansor import COST_TASKS, OPERATORS, plot_scheduler, print_result, run
from benchmarks.ansor_vta import print_vta, run_vta
from compiler.codegen.abi import default_threads
from compiler.tune.cost_model import MIN_SAMPLES
from compiler.tune.measure import MAX_THREADS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--ops",
        nargs="*",
        default=list(OPERATORS),
        choices=list(OPERATORS),
        help="none: only the task scheduler",
    )
    p.add_argument("--trials", type=int, nargs="+", default=[64, 200])
    p.add_argument("--no-scheduler", action="store_true", help="skip the ResNet-18 part")
    p.add_argument(
        "--no-winograd",
        action="store_true",
        help="schedule ResNet-18's groups without the Winograd ones (the slowest to lower,"
        " build and search)",
    )
    p.add_argument(
        "--search-cost",
        nargs="*",
        default=[],
        choices=list(COST_TASKS),
        help="time the proposal step against the measurement of a batch on these tasks",
    )
    p.add_argument("--search-batch", type=int, default=64, help="the batch --search-cost times")
    p.add_argument("--tvm-python", help="a Python with apache-tvm, for MetaSchedule")
    p.add_argument(
        "--threads",
        type=int,
        default=default_threads(),
        help="the kernels' thread count, every tuner's and peer's (default: the thread pool's"
        " size, %(default)s here)",
    )
    hostisa.add_option(p)
    p.add_argument(
        "--vta",
        nargs="+",
        metavar="LAYER",
        choices=[f"C{k}" for k in range(2, 13)],
        help="only the accelerator: these ResNet-18 layers, auto-scheduler against the template"
        " tuner in simulated cycles",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the figures as JSON to this file")
    p.add_argument("--plot", help="write the task-scheduler curves to this PNG")
    args = p.parse_args()
    if args.search_batch < MIN_SAMPLES:
        p.error(f"--search-batch must be at least {MIN_SAMPLES} (the cost model's first fit)")
    if not 1 <= args.threads <= MAX_THREADS:
        p.error(f"--threads must be 1 to {MAX_THREADS}")
    if args.vta:
        result = run_vta(args.vta, sorted(args.trials), args.seed)
        if args.json:
            Path(args.json).write_text(json.dumps(result))
        print_vta(result)
        return
    hostisa.apply_option(p, args)
    result = run(
        args.ops,
        sorted(args.trials),
        not args.no_scheduler,
        args.tvm_python,
        args.threads,
        args.seed,
        not args.no_winograd,
        args.search_cost,
        args.search_batch,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result))
    print_result(result)
    if args.plot and "scheduler" in result:
        plot_scheduler(result, args.plot)


if __name__ == "__main__":
    main()
